package host

import (
	"context"
	"time"

	"github.com/skeinrun/skein/store"
)

// Defaults of WorkOptions.RetryBackoff and MaxRetryBackoff.
const (
	DefaultRetryBackoff    = time.Second
	DefaultMaxRetryBackoff = time.Minute
)

// retryDelay is the backoff after a run's nth failed drive in a row:
// o.RetryBackoff doubled n-1 times, at most o.MaxRetryBackoff.
func retryDelay(o WorkOptions, n int) time.Duration {
	d := o.RetryBackoff
	for i := 1; i < n && d < o.MaxRetryBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxRetryBackoff)
}

// retryLater handles a drive of lease l that failed with err (not a
// divergence, a lost lease or a shutdown: a commit or a read failed, the
// module did not compile): it counts the failure, logs it once with the
// backoff it leads to, and keeps the lease until the backoff ends
// (RenewLease to then), so that no worker, this one included, claims the
// run before. If the lease cannot be extended (the store fails that too),
// it is left to expire at its last renewal, at most LeaseTTL away.
func (h *Host) retryLater(ctx context.Context, l store.Lease, o WorkOptions, err error) {
	h.mu.Lock()
	n := h.failures[l.RunID] + 1
	h.failures[l.RunID] = n
	h.mu.Unlock()
	d := retryDelay(o, n)
	h.metrics.Of(l.RunID).DriveFailures.Add(1)
	h.log.Error("drive run failed; the run is driven again after a backoff", "run", l.RunID, "failures", n, "retry_in", d, "err", err)
	if rerr := h.cfg.Store.RenewLease(context.WithoutCancel(ctx), l, time.Now().Add(d).UnixNano()); rerr != nil {
		h.log.Warn("keep the lease through the backoff: failed; it expires at its last renewal instead", "run", l.RunID, "err", rerr)
	}
}

// failedBefore reports whether the drive of runID failed the last time
// too (retryLater counted it).
func (h *Host) failedBefore(runID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failures[runID] > 0
}

// retried forgets the failures of a run whose drive went well.
func (h *Host) retried(runID string) {
	h.mu.Lock()
	delete(h.failures, runID)
	h.mu.Unlock()
}
