package host

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// Attempts returns the recorded attempts of a run's ops, and its instance
// drops at store.IdleKey (store.Store.Attempts), for the timeline.
func (h *Host) Attempts(ctx context.Context, runID string) ([]store.Attempt, error) {
	as, err := h.cfg.Store.Attempts(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("attempts of run %s: %w", runID, err)
	}
	return as, nil
}

// taskAttempt records the end of attempt n of the remote activity task t
// (ended now with msg, "" when it succeeded), from its claim: a remote
// call's attempts, as runAttempts records an in-process call's. It is
// called for failed attempts and for the success of a retried call only,
// so a call that succeeds at once costs no write. A failure to record it
// is logged: the timeline misses the attempt, the run is unaffected.
func (h *Host) taskAttempt(ctx context.Context, t store.Task, n int, now time.Time, msg string) {
	a := store.Attempt{Key: t.Key, N: n, End: now.UnixNano(), Error: msg}
	if t.Attempt == n {
		a.Start = t.ClaimedAt
	}
	b := store.Batch{Attempts: []store.RunAttempt{{RunID: t.RunID, Attempt: a}}}
	if err := h.cfg.Store.Commit(context.WithoutCancel(ctx), b); err != nil {
		h.log.Warn("activity tasks: record an attempt for the timeline", "run", t.RunID, "key", t.Key, "attempt", n, "err", err)
	}
}
