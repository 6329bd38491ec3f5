package tracing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// TestParse: the traceparents W3C Trace Context admits, and an error
// naming the rule for the others.
func TestParse(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, s := range []string{good, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
		"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future"} {
		sc, err := Parse(s)
		if err != nil || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsRemote() {
			t.Errorf("Parse(%q) = %v, %v", s, sc, err)
		}
		if got := Format(sc); got != "00"+s[2:55] {
			t.Errorf("Format(Parse(%q)) = %q", s, got)
		}
	}
	for _, s := range []string{"", "00-zz", strings.ToUpper(good), good + "-x",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), "traceparent") || !strings.Contains(err.Error(), "W3C") {
			t.Errorf("Parse(%q): %v; want an error naming the traceparent and the rule", s, err)
		}
	}
}

// TestSpanIDs: every id is the same when computed again, and differs
// with what it is derived from; a run's traceparent gives its trace.
func TestSpanIDs(t *testing.T) {
	r := store.Run{ID: "r1", CreatedAt: time.Unix(0, 1_700_000_000_123_456_789)}
	run := RunSpan(r)
	if again := RunSpan(store.Run{ID: "r1", CreatedAt: time.Unix(0, r.CreatedAt.UnixNano())}); !again.Equal(run) || !run.IsValid() || !run.IsSampled() {
		t.Errorf("RunSpan: %v, then %v", run, again)
	}
	other := RunSpan(store.Run{ID: "r1", CreatedAt: r.CreatedAt.Add(1)})
	if other.TraceID() == run.TraceID() || other.SpanID() == run.SpanID() {
		t.Errorf("two runs named r1 created 1ns apart share ids: %v %v", run, other)
	}
	r.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	traced := RunSpan(r)
	if traced.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || traced.IsSampled() || traced.SpanID() != run.SpanID() {
		t.Errorf("RunSpan under a traceparent: %v", traced)
	}
	op1, op2 := OpSpan(run, "1"), OpSpan(run, "2")
	if op1.Equal(op2) || !op1.Equal(OpSpan(run, "1")) || op1.TraceID() != run.TraceID() {
		t.Errorf("OpSpan: %v %v", op1, op2)
	}
	if a1, a2 := AttemptSpan(op1, 1), AttemptSpan(op1, 2); a1.Equal(a2) || a1.SpanID() == op1.SpanID() {
		t.Errorf("AttemptSpan: %v %v", a1, a2)
	}
	if got, want := AttemptTraceparent(Format(op1), 2), Format(AttemptSpan(op1, 2)); got != want || AttemptTraceparent("", 1) != "" {
		t.Errorf("AttemptTraceparent = %q, want %q", got, want)
	}
	var g IDGenerator
	if tid, sid := g.NewIDs(want(context.Background(), op1)); tid != op1.TraceID() || sid != op1.SpanID() {
		t.Errorf("IDGenerator.NewIDs did not take the ids asked for")
	}
	if sid := g.NewSpanID(context.Background(), op1.TraceID()); !sid.IsValid() || sid == op1.SpanID() {
		t.Errorf("IDGenerator.NewSpanID without a wish: %v", sid)
	}
}
