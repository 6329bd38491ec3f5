package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/skeinrun/skein/store"
)

// leaseRetry is how often Drive tries again to claim a run another worker
// holds, while DriveOptions.LeaseWait lasts.
const leaseRetry = 250 * time.Millisecond

// driveClaimed claims the run's lease for Drive (waiting for it up to
// o.LeaseWait), drives the run under it, and releases it unless the run's
// last commit did.
func (h *Host) driveClaimed(ctx context.Context, runID string, o DriveOptions) (store.Run, error) {
	if o.Owner == "" {
		o.Owner = h.owner
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	c, err := h.claimRun(ctx, runID, o)
	if err != nil {
		return store.Run{}, fmt.Errorf("drive %s: %w", runID, err)
	}
	l := c.Lease
	d := h.driveHeld(ctx, l, o.LeaseTTL, o, false, &c.Run)
	switch {
	case d.lost:
		h.metrics.Of(runID).LeasesLost.Add(1)
		return d.run, fmt.Errorf("drive %s: %w", runID, errLeaseLost)
	case !d.released:
		if err := h.cfg.Store.ReleaseLease(context.WithoutCancel(ctx), l); err != nil {
			h.log.Warn("release lease", "run", runID, "token", l.Token, "err", err)
		}
	}
	return d.run, d.err
}

// claimRun claims the lease of run id for o.Owner, trying again every
// leaseRetry while another worker holds it and o.LeaseWait lasts; or
// takes the lease the run was created with (StartOptions.ClaimForDrive).
func (h *Host) claimRun(ctx context.Context, id string, o DriveOptions) (store.ClaimedRun, error) {
	if c, ok := h.takePreclaimed(ctx, id, o); ok {
		return c, nil
	}
	deadline := time.Now().Add(o.LeaseWait)
	waiting := false
	for {
		c, err := h.cfg.Store.ClaimRun(ctx, id, o.Owner, time.Now().UnixNano(), o.LeaseTTL)
		if err == nil {
			return c, nil
		}
		var held *store.LeaseHeldError
		left := time.Until(deadline)
		switch {
		case !errors.As(err, &held), o.LeaseWait <= 0:
			return store.ClaimedRun{}, err
		case left <= 0:
			return store.ClaimedRun{}, fmt.Errorf("%w; gave up after waiting %s", held, o.LeaseWait)
		case !waiting && o.OnLeaseWait != nil:
			o.OnLeaseWait(held.Lease)
		}
		waiting = true
		t := time.NewTimer(min(leaseRetry, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return store.ClaimedRun{}, fmt.Errorf("%w; stopped waiting: %w", held, ctx.Err())
		case <-t.C:
		}
	}
}

// heldDrive is how a drive under a lease went.
type heldDrive struct {
	run      store.Run
	err      error
	lost     bool // the lease was lost: another worker claimed the run
	released bool // the run's last commit released the lease
}

// driveHeld drives the run of lease l, which this host holds (claimed by
// Work or by Drive), while keeping the lease: it renews it every ttl/3
// and stops the drive when it is lost (keepLease), and stops an earlier
// drive of the run in this process first (takeOver). It does not release
// the lease: the caller decides (Work keeps it through a retry's backoff).
// Work and Drive share it.
func (h *Host) driveHeld(ctx context.Context, l store.Lease, ttl time.Duration, o DriveOptions, byWork bool, claimed *store.Run) heldDrive {
	rctx, stop := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.keepLease(rctx, l, ttl, stop)
	}()
	var d heldDrive
	if h.takeOver(rctx, l.RunID, stop) {
		hold := &leaseHold{lease: l, byWork: byWork, claimed: claimed}
		o.hold = hold
		d.run, d.err = h.Drive(rctx, l.RunID, o)
		d.released = hold.released
		h.mu.Lock()
		delete(h.leased, l.RunID)
		h.mu.Unlock()
	} else {
		d.err = rctx.Err() // stopped while an earlier drive was let go
	}
	// A renewal that comes after the run's last commit released the lease
	// finds it gone: that is the drive's own release, not a lost lease.
	d.lost = !d.released && (errors.Is(context.Cause(rctx), store.ErrLeaseLost) || errors.Is(d.err, store.ErrLeaseLost))
	stop(nil)
	wg.Wait()
	return d
}

// Resume points a suspended, paused, diverged or failed run at another
// module (a fixed or changed version of its code) and drives it: the run
// replays its history against the new code. Records are kept; a recorded
// key the new code reaches with a different function diverges the run
// again. A paused run is unpaused first. The run's status is checked and
// changed under the drive's lease (see Drive): a completed or canceled
// run is never resumed.
func (h *Host) Resume(ctx context.Context, runID, module string, o DriveOptions) (store.Run, error) {
	run, hash, err := h.resumable(ctx, runID, module)
	if err != nil {
		return run, err
	}
	to := &resumeTo{module: hash}
	if run.IsPaused() {
		if _, err := h.Unpause(ctx, runID); err != nil {
			return run, fmt.Errorf("resume %s: %w", runID, err)
		}
	}
	o.resume = to
	return h.Drive(ctx, runID, o)
}

// resumable reads the run Resume and ResumeOn point at module (a name or
// hash; empty: none given, hash ""), refusing a run that has ended for
// good (ErrTerminal) and a module without the run's workflow.
func (h *Host) resumable(ctx context.Context, runID, module string) (run store.Run, hash string, err error) {
	if run, err = h.cfg.Store.Run(ctx, runID); err != nil {
		return store.Run{}, "", fmt.Errorf("resume %s: %w", runID, err)
	}
	if run.Status.Final() {
		return run, "", fmt.Errorf("resume %s: the run is %s: %w", runID, run.Status, ErrTerminal)
	}
	if module == "" {
		return run, "", nil
	}
	m, err := h.cfg.Store.ModuleInfo(ctx, module)
	if err != nil {
		return run, "", fmt.Errorf("resume %s: module %q: %w", runID, module, err)
	}
	for _, w := range m.Workflows {
		if w == run.Workflow {
			return run, m.Hash, nil
		}
	}
	return run, "", fmt.Errorf("resume %s: module %s has no workflow %q: %w", runID, shortHash(m.Hash), run.Workflow, ErrInvalid)
}
