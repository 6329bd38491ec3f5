package activity

import "context"

// Info is the call an activity's attempt runs for.
type Info struct {
	// RunID is the run that made the call.
	RunID string
	// Key is the call op's key in its run.
	Key string
	// Name is the activity's name, what the workflow passed to skein.Call.
	Name string
	// Attempt is the attempt's number, 1 for the first; the count goes on
	// across restarts.
	Attempt int
	// IdempotencyKey, "{RunID}.{Key}", is the same for every attempt of
	// the call and unique across runs: pass it to the systems the
	// activity changes, so that a repeated attempt (a retry, or one run
	// again after a restart interrupted it) does not repeat the change.
	IdempotencyKey string
	// Traceparent is the W3C traceparent of the attempt's span when the
	// host traces runs (docs/observability.md), empty otherwise: pass it
	// on to the systems the activity calls, so their spans join the
	// run's trace. The host also puts the span in the activity's context,
	// for OpenTelemetry's tracers; with package worker, which imports the
	// standard library only, extract it from here
	// (docs/observability.md).
	Traceparent string
}

type infoKey struct{}

// WithInfo returns a context that carries i, for InfoFrom. The host and
// the worker package call it for each attempt they run; a test of an
// activity may too.
func WithInfo(ctx context.Context, i Info) context.Context {
	return context.WithValue(ctx, infoKey{}, i)
}

// InfoFrom returns the call the activity's context runs for, and false
// when ctx carries none (it was not given by a host or a worker).
func InfoFrom(ctx context.Context) (Info, bool) {
	i, ok := ctx.Value(infoKey{}).(Info)
	return i, ok
}
