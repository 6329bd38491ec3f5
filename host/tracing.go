package host

import (
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/tracing"
	"github.com/skeinrun/skein/store"
)

// Traces (docs/observability.md): with Config.TracerProvider set, the
// host emits a span per run, per execution, per durable op and per
// attempt of an activity call (host/internal/tracing). Without it,
// h.tracer is nil and each place below costs one nil check.

// TraceIDGenerator is the IDGenerator a TracerProvider given in
// Config.TracerProvider should be built with
// (sdktrace.WithIDGenerator): it gives each of skein's spans the id
// skein derives for it, so that spans emitted by different processes
// (an op's, by the worker that settled it; its run's, by the one that
// ended the run) join in one tree, and random ids to every other span.
func TraceIDGenerator() sdktrace.IDGenerator { return tracing.IDGenerator{} }

// TraceparentOfAttempt is the W3C traceparent of attempt n of the
// remote activity task t (the parent of what its worker does), or empty
// when t's run is not traced. The API hands it to workers with each
// claimed task.
func TraceparentOfAttempt(t store.Task, n int) string {
	return tracing.AttemptTraceparent(t.TraceParent, n)
}

// checkTraceparent checks a traceparent given to Start ("" is none).
func checkTraceparent(tp string) error {
	if tp == "" {
		return nil
	}
	_, err := tracing.Parse(tp)
	return err
}

// validTraceparent is tp if it is a valid traceparent, else "": a
// webhook's sender is a third party, and a bad tracing header must not
// lose its delivery (W3C Trace Context says to ignore it).
func validTraceparent(tp string) string {
	if _, err := tracing.Parse(tp); err != nil {
		return ""
	}
	return tp
}

// setTracer sets up the host's tracer from Config.TracerProvider.
func (h *Host) setTracer() {
	h.tracer = tracing.New(h.cfg.TracerProvider, h.owner, h.log)
	if h.tracer != nil {
		h.xcfg.Tracer = h.tracer // never a nil *Tracer in the interface
	}
}

// traceExecution emits the span of an execution of rs's run that
// started at start after replaying records journal records.
func (h *Host) traceExecution(rs *runState, x *exec.Exec, start time.Time, records int) {
	if h.tracer == nil || h.sim != nil {
		return
	}
	h.tracer.Execution(rs.Run, rs.Worker(), start, time.Now(), records, x.State.String())
}

// traceRunEnd emits the span of a run whose end was just committed.
func (h *Host) traceRunEnd(r store.Run) {
	if h.tracer == nil || h.sim != nil || !r.Status.Terminal() {
		return
	}
	h.tracer.Run(r, r.UpdatedAt)
}

// successorTraceparent is the traceparent of the successor of a run that
// continued as new: its predecessor's run span, so that a chain of runs
// stays one trace.
func (h *Host) successorTraceparent(pred store.Run) string {
	if h.tracer == nil {
		return ""
	}
	return tracing.Format(tracing.RunSpan(pred))
}

// traceRemoteAttempt emits the span of attempt n of task t, which worker
// served and which ended at end with msg (empty: it succeeded).
func (h *Host) traceRemoteAttempt(t store.Task, n int, worker string, end time.Time, msg string) {
	if h.tracer == nil {
		return
	}
	start := end.UnixNano()
	if t.Attempt == n && t.ClaimedAt != 0 {
		start = t.ClaimedAt
	}
	if worker == "" {
		worker = t.Owner
	}
	h.tracer.RemoteAttempt(t, n, worker, start, end.UnixNano(), msg)
}
