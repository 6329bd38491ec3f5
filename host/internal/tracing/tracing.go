// Package tracing emits the OpenTelemetry spans of skein's runs
// (docs/observability.md, "Traces"): a span per run, per execution, per
// durable op and per attempt of an activity call. A nil *Tracer is
// tracing off; the host and the execution check for nil and do nothing
// else then.
//
// Every span is emitted once its end is known, with its real start time:
// a run outlives the process that started it, so no span stays open
// across executions. The ids of a run's, an op's and an attempt's spans
// are derived from what the store keeps (ids.go), so a span and its
// children may be emitted by different processes.
package tracing

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinrun/skein/store"
)

// The attributes of skein's spans.
const (
	AttrRunID    = "skein.run_id"
	AttrKey      = "skein.key"
	AttrFunction = "skein.function"
	AttrKind     = "skein.kind"
	AttrAttempt  = "skein.attempt"
	AttrWorker   = "skein.worker"
	AttrStatus   = "skein.status"
	AttrReplay   = "skein.replay"
	AttrRecords  = "skein.records"
	AttrState    = "skein.state"
)

// Tracer emits spans through a TracerProvider.
type Tracer struct {
	tr     trace.Tracer
	worker string // this process's worker id (the host's lease owner)
	log    *slog.Logger
	warned atomic.Bool // the provider gave a span another id than skein's
}

// New returns a Tracer of tp, or nil (tracing off) when tp is nil.
// worker names this process in the spans' skein.worker attribute.
func New(tp trace.TracerProvider, worker string, log *slog.Logger) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{tr: tp.Tracer("github.com/skeinrun/skein/host"), worker: worker, log: log}
}

// span is a span to emit: its parent (zero: a root), the ids skein
// derived for it, its name, times, attributes and error, if any.
type span struct {
	parent, id trace.SpanContext
	name       string
	start, end time.Time
	attrs      []attribute.KeyValue
	err        string
}

// start starts s (without ending it) and returns its context.
func (t *Tracer) start(ctx context.Context, s span) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithTimestamp(s.start), trace.WithAttributes(s.attrs...)}
	if s.parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, s.parent)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	if s.id.IsValid() {
		ctx = want(ctx, s.id)
	}
	ctx, sp := t.tr.Start(ctx, s.name, opts...)
	if s.id.IsValid() && sp.IsRecording() && sp.SpanContext().SpanID() != s.id.SpanID() && !t.warned.Swap(true) {
		t.log.Warn("tracing: the TracerProvider gave a span another id than skein's, so spans emitted by different processes (a run's, its ops') will not join; build it with host.TraceIDGenerator()",
			"span", s.name)
	}
	return ctx, sp
}

// emit emits s, ended.
func (t *Tracer) emit(s span) {
	_, sp := t.start(context.Background(), s)
	end(sp, s.err, s.end)
}

// end ends sp at when, with an error status when err is not empty.
func end(sp trace.Span, err string, when time.Time) {
	if err != "" {
		sp.SetStatus(codes.Error, err)
	}
	sp.End(trace.WithTimestamp(when))
}

// Run emits the span of run r, which ended at end (its status final).
func (t *Tracer) Run(r store.Run, end time.Time) {
	s := span{parent: runParent(r), id: RunSpan(r), name: "run " + r.Workflow, start: r.CreatedAt, end: end,
		attrs: []attribute.KeyValue{attribute.String(AttrRunID, r.ID), attribute.String(AttrFunction, r.Workflow),
			attribute.String(AttrStatus, string(r.Status))}}
	if r.Status != store.RunCompleted && r.Status != store.RunContinued {
		s.err = string(r.Status) + ": " + r.Error
	}
	t.emit(s)
}

// Execution emits the span of one execution of run r (a child of the
// run's span) by worker (empty: this process's): from start to end, a
// replay when it replayed records journal records first, ended in state.
func (t *Tracer) Execution(r store.Run, worker string, start, end time.Time, records int, state string) {
	t.emit(span{parent: RunSpan(r), name: "execution " + r.Workflow, start: start, end: end,
		attrs: []attribute.KeyValue{attribute.String(AttrRunID, r.ID), attribute.String(AttrFunction, r.Workflow),
			attribute.String(AttrWorker, t.workerOr(worker)), attribute.Bool(AttrReplay, records > 0),
			attribute.Int(AttrRecords, records), attribute.String(AttrState, state)}})
}

// Op is a durable op that settled.
type Op struct {
	Key, Kind, Function string
	Attempts            int   // the attempts it took (calls, steps with a policy); 0: not counted
	Start, End          int64 // unix ns; Start 0: not known (End is used)
	Err                 string
	Worker              string // the worker that settled it; empty: this process
}

// Op emits the span of an op of run r that settled (a child of the run's
// span).
func (t *Tracer) Op(r store.Run, o Op) {
	name := o.Kind
	if o.Function != "" && o.Function != o.Kind {
		name += " " + o.Function
	}
	start := o.Start
	if start == 0 {
		start = o.End
	}
	run := RunSpan(r)
	attrs := []attribute.KeyValue{attribute.String(AttrRunID, r.ID), attribute.String(AttrKey, o.Key),
		attribute.String(AttrFunction, o.Function), attribute.String(AttrKind, o.Kind), attribute.String(AttrWorker, t.workerOr(o.Worker))}
	if o.Attempts > 0 {
		attrs = append(attrs, attribute.Int(AttrAttempt, o.Attempts))
	}
	t.emit(span{parent: run, id: OpSpan(run, o.Key), name: name, start: time.Unix(0, start), end: time.Unix(0, o.End),
		attrs: attrs, err: o.Err})
}

// OpTraceparent is the traceparent of the span of run r's op at key:
// the parent of a child run's span and of a remote call's attempts'.
func (t *Tracer) OpTraceparent(r store.Run, key string) string {
	return Format(OpSpan(RunSpan(r), key))
}

// Attempt starts the span of attempt n of run r's call of fn at key,
// served in this process by worker (empty: this process's), and returns ctx carrying it (the activity's
// own spans are its children), its traceparent (activity.Info) and the
// func that ends it with the attempt's error (nil: it succeeded).
func (t *Tracer) Attempt(ctx context.Context, r store.Run, worker, key, fn string, n int) (context.Context, string, func(error)) {
	op := OpSpan(RunSpan(r), key)
	ctx, sp := t.start(ctx, span{parent: op, id: AttemptSpan(op, n), name: "attempt " + fn, start: time.Now(),
		attrs: attemptAttrs(r.ID, key, fn, n, t.workerOr(worker))})
	return ctx, Format(sp.SpanContext()), func(err error) {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		end(sp, msg, time.Now())
	}
}

// RemoteAttempt emits the span of attempt n of task tk that a worker
// served (a child of the call op's span, tk.TraceParent), from start to
// end (unix ns), failed with err unless empty. A task without a
// traceparent (its run is not traced) has none.
func (t *Tracer) RemoteAttempt(tk store.Task, n int, worker string, start, end int64, err string) {
	op, perr := Parse(tk.TraceParent)
	if perr != nil {
		return
	}
	t.emit(span{parent: op, id: AttemptSpan(op, n), name: "attempt " + tk.Name, start: time.Unix(0, start), end: time.Unix(0, end),
		attrs: attemptAttrs(tk.RunID, tk.Key, tk.Name, n, worker), err: err})
}

// workerOr is worker, or this process's worker id when it is empty.
func (t *Tracer) workerOr(worker string) string {
	if worker == "" {
		return t.worker
	}
	return worker
}

func attemptAttrs(runID, key, fn string, n int, worker string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(AttrRunID, runID), attribute.String(AttrKey, key),
		attribute.String(AttrFunction, fn), attribute.Int(AttrAttempt, n), attribute.String(AttrWorker, worker)}
}
