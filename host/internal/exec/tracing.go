package exec

import (
	"context"
	"strings"

	"github.com/skeinrun/skein/host/internal/tracing"
	"github.com/skeinrun/skein/store"
)

// Tracer receives the spans of an execution's new work
// (host/internal/tracing; docs/observability.md). Config.Tracer is nil
// when tracing is off: each place that would emit a span checks that
// first and does nothing else then. A replay records nothing for the ops
// its journal settles, so it emits no span for them.
type Tracer interface {
	// Op emits the span of run's op that settled.
	Op(run store.Run, o tracing.Op)
	// OpTraceparent is the traceparent of the span of run's op at key.
	OpTraceparent(run store.Run, key string) string
	// Attempt starts the span of attempt n of run's call of fn at key,
	// served in this process by worker: the activity's context, its traceparent,
	// and the func that ends it.
	Attempt(ctx context.Context, run store.Run, worker, key, fn string, n int) (context.Context, string, func(error))
}

// attemptTracer is what an activity call's goroutine needs to emit the
// spans of its attempts: the tracer (nil: off), and the run and worker as
// the call started.
type attemptTracer struct {
	t      Tracer
	run    store.Run
	worker string
}

// opSpan emits the span of the op of o, which this execution settled:
// it started when this execution issued it, or when an earlier one did
// (RunState.OpStarts).
func (x *Exec) opSpan(o store.Outcome) {
	if strings.HasPrefix(o.Key, "!") {
		return // a record of the run's, not an op's (a cancellation)
	}
	start := o.StartedAt
	if start == 0 {
		start = x.rs.OpStarts[o.Key]
	}
	op := tracing.Op{Key: o.Key, Kind: o.Kind, Function: o.Function, Attempts: o.Attempts, Start: start, End: o.SettledAt,
		Worker: x.rs.Worker()}
	if o.Status == store.OutcomeError {
		op.Err = o.Error
	}
	x.tracer.Op(x.rs.Run, op)
}

// Worker is the owner of the lease the run is driven under, or empty.
func (rs *RunState) Worker() string {
	if rs.Lease == nil {
		return ""
	}
	return rs.Lease.Owner
}

// NoteOpStarts keeps, for the spans of the ops an execution settles, when
// each op of outs still pending was issued by an earlier execution.
func (rs *RunState) NoteOpStarts(outs []store.Outcome) {
	rs.OpStarts = map[string]int64{}
	for i := range outs {
		if o := &outs[i]; o.Status == store.OutcomePending && o.StartedAt != 0 {
			rs.OpStarts[o.Key] = o.StartedAt
		}
	}
}

// String names how an execution ended, for its span.
func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Done:
		return "done"
	case Failed:
		return "failed"
	case Diverged:
		return "diverged"
	case Evicted:
		return "evicted"
	case Suspended:
		return "suspended"
	case stDescribed:
		return "described"
	case Stopped:
		return "stopped"
	case Unrecorded:
		return "unrecorded"
	case Paused:
		return "paused"
	}
	return "unknown"
}
