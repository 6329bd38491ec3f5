package host

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/skeinrun/skein/store"
)

// Errors of the run-control API, matched with errors.Is.
var (
	// ErrNotFound: no such module, run or promise (it is store.ErrNotFound).
	ErrNotFound = store.ErrNotFound
	// ErrConflict: a promise settled twice (it is store.ErrConflict).
	ErrConflict = store.ErrConflict
	// ErrTerminal: the run has ended; it cannot be canceled.
	ErrTerminal = errors.New("the run has ended")
)

// Resolve settles the external promise whose full id is "{run}.{key}"
// (see Future.Key in the guest SDK) with value (JSON), or with an error
// when errMsg is not empty. A promise settles exactly once: a second
// Resolve fails with ErrConflict, an unknown id with ErrNotFound. The
// settlement is durable when Resolve returns; the run receives it at its
// next idle point, now if it is active in this process, else when a
// worker (Work) or a Drive picks the run up.
func (h *Host) Resolve(ctx context.Context, fullID string, value json.RawMessage, errMsg string) error {
	return errors.New("host: Resolve is not implemented yet")
}

// Cancel requests the cancellation of a run with a reason (default
// "canceled"). Every task's Context then reports it, pending sleeps,
// promises, activity calls and child runs fail with a cancellation error
// the workflow can handle (to compensate), children are canceled too, and
// the run ends canceled. It returns the run as stored; ErrNotFound for an
// unknown run, ErrTerminal for one that has ended. Canceling twice is
// harmless.
func (h *Host) Cancel(ctx context.Context, runID, reason string) (store.Run, error) {
	return store.Run{}, errors.New("host: Cancel is not implemented yet")
}

// WorkOptions tune Work.
type WorkOptions struct {
	// Concurrency is the most runs driven at once; default 2*GOMAXPROCS.
	Concurrency int
	// Poll is how often the store is asked for due runs when nothing
	// signals new work; default 250ms.
	Poll time.Duration
	// Grace is how long running executions may go on after ctx ends
	// before they are interrupted; default 10s. What they recorded stays.
	Grace time.Duration
}

// Work drives runs until ctx ends: pending runs, runs left running by a
// crashed process, suspended runs whose timer is due, that got a
// settlement or a cancellation, or whose deadline passed. Start, Resolve
// and Cancel on this host signal it at once. When ctx ends Work stops
// taking runs, lets the ones in progress go on for Grace, interrupts the
// rest (they stay durable and resume on the next start) and returns nil.
func (h *Host) Work(ctx context.Context, o WorkOptions) error {
	return errors.New("host: Work is not implemented yet")
}
