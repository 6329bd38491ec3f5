package host

import (
	"context"
	"time"

	"github.com/skeinrun/skein/store"
)

// Runs started to be driven at once (StartOptions.ClaimForDrive) are
// created already leased to this host, in the same store write, and the
// Drive that follows takes that lease instead of claiming the run: one
// write fewer between a start and the run's first op.

// preclaim keeps the lease of a run created leased, for its Drive.
func (h *Host) preclaim(c store.ClaimedRun) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.preclaimed == nil {
		h.preclaimed = map[string]store.ClaimedRun{}
	}
	now := time.Now().UnixNano()
	for id, p := range h.preclaimed { // leases no Drive took
		if p.Lease.Expiry <= now {
			delete(h.preclaimed, id)
		}
	}
	h.preclaimed[c.Run.ID] = c
}

// preclaimLive reports whether this host keeps an unexpired lease of run
// id, created leased for owner ("": this host's).
func (h *Host) preclaimLive(id, owner string) bool {
	if owner == "" {
		owner = h.owner
	}
	h.mu.Lock()
	c, ok := h.preclaimed[id]
	h.mu.Unlock()
	return ok && holds(c, owner, time.Now())
}

// holds reports whether preclaimed lease c is owner's and unexpired at now.
func holds(c store.ClaimedRun, owner string, now time.Time) bool {
	return c.Lease.Owner == owner && c.Lease.Expiry > now.UnixNano()
}

// takePreclaimed returns the lease of run id created leased to o.Owner,
// renewed for o.LeaseTTL if less than half of that is left; ok is false
// if there is none, or it expired, or the renewal failed.
func (h *Host) takePreclaimed(ctx context.Context, id string, o DriveOptions) (store.ClaimedRun, bool) {
	h.mu.Lock()
	c, ok := h.preclaimed[id]
	delete(h.preclaimed, id)
	h.mu.Unlock()
	now := time.Now()
	if !ok || !holds(c, o.Owner, now) {
		return store.ClaimedRun{}, false
	}
	if time.Duration(c.Lease.Expiry-now.UnixNano()) < o.LeaseTTL/2 {
		expiry := now.Add(o.LeaseTTL).UnixNano()
		if err := h.cfg.Store.RenewLease(ctx, c.Lease, expiry); err != nil {
			return store.ClaimedRun{}, false
		}
		c.Lease.Expiry, c.Run.LeaseExpiry = expiry, expiry
	}
	return c, true
}
