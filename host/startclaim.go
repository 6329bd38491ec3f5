package host

import (
	"context"
	"time"

	"github.com/skeinrun/skein/store"
)

// Runs started to be driven at once (StartOptions.ClaimForDrive) are
// created already leased to this host, in the same store write, and the
// Drive that follows takes that lease instead of claiming the run: one
// write fewer between a start and the run's first op. The run's first
// execution starts while that write commits (prestart.go), and the Drive
// takes it with the lease.

// preclaim is a lease a run was created with, kept for its Drive, and
// the run's prestarted execution (nil: none).
type preclaim struct {
	c      store.ClaimedRun
	pre    *prestart
	expire *time.Timer // drops the entry when the lease expires untaken
}

// preclaim keeps the lease of a run created leased, and its prestarted
// execution, for its Drive.
func (h *Host) preclaim(c store.ClaimedRun, pre *prestart) {
	e := &preclaim{c: c, pre: pre}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		pre.drop()
		return
	}
	if h.preclaimed == nil {
		h.preclaimed = map[string]*preclaim{}
	}
	old := h.preclaimed[c.Run.ID]
	h.preclaimed[c.Run.ID] = e
	e.expire = time.AfterFunc(time.Until(time.Unix(0, c.Lease.Expiry)), func() { h.unclaim(c.Run.ID, e) })
	h.mu.Unlock()
	if old != nil {
		old.expire.Stop()
		old.pre.drop()
	}
}

// unclaim drops preclaimed entry e of run id, its lease expired and no
// Drive took it.
func (h *Host) unclaim(id string, e *preclaim) {
	h.mu.Lock()
	if h.preclaimed[id] == e {
		delete(h.preclaimed, id)
	}
	h.mu.Unlock()
	e.pre.drop()
}

// dropPreclaimed drops every lease no Drive took, and their prestarted
// executions (Close).
func (h *Host) dropPreclaimed() {
	h.mu.Lock()
	all := h.preclaimed
	h.preclaimed = nil
	h.mu.Unlock()
	for _, e := range all {
		e.expire.Stop()
		e.pre.drop()
	}
}

// preclaimLive reports whether this host keeps an unexpired lease of run
// id, created leased for owner ("": this host's).
func (h *Host) preclaimLive(id, owner string) bool {
	if owner == "" {
		owner = h.owner
	}
	h.mu.Lock()
	e, ok := h.preclaimed[id]
	h.mu.Unlock()
	return ok && holds(e.c, owner, time.Now())
}

// holds reports whether preclaimed lease c is owner's and unexpired at now.
func holds(c store.ClaimedRun, owner string, now time.Time) bool {
	return c.Lease.Owner == owner && c.Lease.Expiry > now.UnixNano()
}

// takePreclaimed returns the lease of run id created leased to o.Owner,
// renewed for o.LeaseTTL if less than half of that is left, and the run's
// prestarted execution (nil: none); ok is false if there is none, or it
// expired, or the renewal failed: then the execution is dropped.
func (h *Host) takePreclaimed(ctx context.Context, id string, o DriveOptions) (store.ClaimedRun, *prestart, bool) {
	h.mu.Lock()
	e, ok := h.preclaimed[id]
	delete(h.preclaimed, id)
	h.mu.Unlock()
	if !ok {
		return store.ClaimedRun{}, nil, false
	}
	e.expire.Stop()
	c, now := e.c, time.Now()
	if !holds(c, o.Owner, now) {
		e.pre.drop()
		return store.ClaimedRun{}, nil, false
	}
	if time.Duration(c.Lease.Expiry-now.UnixNano()) < o.LeaseTTL/2 {
		expiry := now.Add(o.LeaseTTL).UnixNano()
		if err := h.cfg.Store.RenewLease(ctx, c.Lease, expiry); err != nil {
			e.pre.drop()
			return store.ClaimedRun{}, nil, false
		}
		c.Lease.Expiry, c.Run.LeaseExpiry = expiry, expiry
	}
	return c, e.pre, true
}
