package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"github.com/skeinrun/skein/store"
)

// The ids of a run's spans. Every span but an execution's has an id any
// process can compute again from what the store keeps: the run span's
// from the run's id and creation time, an op's from its run span's and
// its key, an attempt's from its op's and its number. So a span emitted
// by one process (an op that settles, the run's end) is the child of a
// span another process emitted or will emit. A run started without a
// traceparent gets a trace id made the same way.

// Parse reads a W3C traceparent ("00-{trace id}-{parent id}-{flags}",
// lowercase hex). A version above 00 may carry more fields after the
// four, which are left out; version ff is invalid.
func Parse(s string) (trace.SpanContext, error) {
	if len(s) < 55 || (len(s) > 55 && (s[:2] == "00" || s[55] != '-')) {
		return trace.SpanContext{}, fmt.Errorf("traceparent %.80q: want 00-{32 hex digits}-{16 hex digits}-{2 hex digits} (W3C Trace Context)", s)
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' || !lowerHex(s[:2]) || !lowerHex(s[3:35]) || !lowerHex(s[36:52]) || !lowerHex(s[53:55]) {
		return trace.SpanContext{}, fmt.Errorf("traceparent %.80q: want 00-{32 hex digits}-{16 hex digits}-{2 hex digits}, lowercase (W3C Trace Context)", s)
	}
	if s[:2] == "ff" {
		return trace.SpanContext{}, fmt.Errorf("traceparent %.80q: version ff is invalid (W3C Trace Context)", s)
	}
	var tid trace.TraceID
	var sid trace.SpanID
	var flags [1]byte
	_, _ = hex.Decode(tid[:], []byte(s[3:35]))
	_, _ = hex.Decode(sid[:], []byte(s[36:52]))
	_, _ = hex.Decode(flags[:], []byte(s[53:55]))
	if !tid.IsValid() || !sid.IsValid() {
		return trace.SpanContext{}, fmt.Errorf("traceparent %.80q: %w", s, errZeroID)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true}), nil
}

var errZeroID = errors.New("a trace id or a parent id of only zeros is invalid (W3C Trace Context)")

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Format is sc as a traceparent; empty when sc is not valid.
func Format(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// RunSpan is the span context of run r's span. Its trace and flags are
// those of r.TraceParent, or, without one, a trace id derived from the
// run's id and creation time, sampled.
func RunSpan(r store.Run) trace.SpanContext {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(r.CreatedAt.UnixNano()))
	sum := sha256.Sum256([]byte("skein run\x00" + r.ID + "\x00" + string(b[:])))
	cfg := trace.SpanContextConfig{TraceFlags: trace.FlagsSampled, Remote: true}
	copy(cfg.TraceID[:], sum[:16])
	copy(cfg.SpanID[:], sum[16:24])
	if parent, err := Parse(r.TraceParent); err == nil {
		cfg.TraceID, cfg.TraceFlags = parent.TraceID(), parent.TraceFlags()
	}
	fixIDs(&cfg)
	return trace.NewSpanContext(cfg)
}

// runParent is the parent of run r's span (r.TraceParent), or the zero
// span context (a root span).
func runParent(r store.Run) trace.SpanContext {
	sc, _ := Parse(r.TraceParent)
	return sc
}

// OpSpan is the span context of the op at key of the run whose span is
// run.
func OpSpan(run trace.SpanContext, key string) trace.SpanContext {
	return childSpan(run, "op\x00"+key)
}

// AttemptSpan is the span context of attempt n of the op whose span is
// op.
func AttemptSpan(op trace.SpanContext, n int) trace.SpanContext {
	return childSpan(op, "attempt\x00"+strconv.Itoa(n))
}

// childSpan is a span of parent's trace whose id is derived from
// parent's and label.
func childSpan(parent trace.SpanContext, label string) trace.SpanContext {
	sid := parent.SpanID()
	sum := sha256.Sum256(append(sid[:], label...))
	cfg := trace.SpanContextConfig{TraceID: parent.TraceID(), TraceFlags: parent.TraceFlags(), Remote: true}
	copy(cfg.SpanID[:], sum[:8])
	fixIDs(&cfg)
	return trace.NewSpanContext(cfg)
}

// fixIDs makes an id of only zeros (a hash has them once in 2^64) valid.
func fixIDs(cfg *trace.SpanContextConfig) {
	if !cfg.TraceID.IsValid() {
		cfg.TraceID[15] = 1
	}
	if !cfg.SpanID.IsValid() {
		cfg.SpanID[7] = 1
	}
}

// AttemptTraceparent is the traceparent of attempt n of the call whose
// op span's traceparent is op (store.Task.TraceParent); empty when op is.
func AttemptTraceparent(op string, n int) string {
	sc, err := Parse(op)
	if err != nil {
		return ""
	}
	return Format(AttemptSpan(sc, n))
}

// IDGenerator gives each span skein emits the id it derived for it, and
// random ids to every other span (sdktrace.WithIDGenerator).
type IDGenerator struct{}

type wantKey struct{}

// want returns ctx asking IDGenerator for the ids of sc.
func want(ctx context.Context, sc trace.SpanContext) context.Context {
	return context.WithValue(ctx, wantKey{}, sc)
}

// NewIDs returns the trace and span ids ctx asks for, or random ones.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(wantKey{}).(trace.SpanContext); ok {
		return sc.TraceID(), sc.SpanID()
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

// NewSpanID returns the span id ctx asks for, or a random one.
func (IDGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if sc, ok := ctx.Value(wantKey{}).(trace.SpanContext); ok {
		return sc.SpanID()
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
