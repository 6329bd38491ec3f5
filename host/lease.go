package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// errLeaseLost is the cause given to a drive's context when its lease is
// lost.
var errLeaseLost = fmt.Errorf("the worker's lease on the run was lost: %w", store.ErrLeaseLost)

// driveLeased drives the run c (claimed by Work) while keeping
// the lease (driveHeld), and then releases it, unless the run's last
// commit did. A drive that failed (its commits failed, its module does
// not compile) keeps the lease through a backoff instead (retryLater),
// so that no worker drives the run again before it.
func (h *Host) driveLeased(ctx context.Context, c store.ClaimedRun, o WorkOptions) {
	l := c.Lease
	d := h.driveHeld(ctx, l, o.LeaseTTL, DriveOptions{}, true, &c.Run)
	err := d.err
	switch {
	case d.lost:
		h.metrics.Of(l.RunID).LeasesLost.Add(1)
		h.log.Warn("lease lost: the run was claimed again after the lease expired; this drive stopped and recorded nothing more",
			"run", l.RunID, "owner", l.Owner, "token", l.Token)
		return
	case err == nil:
		h.retried(l.RunID)
	case IsDivergence(err):
		h.retried(l.RunID)
		h.log.Warn("run diverged", "run", l.RunID, "err", err)
	case ctx.Err() != nil:
		h.log.Info("run interrupted by shutdown; its lease is released, it resumes on another worker or the next start", "run", l.RunID)
	case h.failedBefore(l.RunID) && h.cancelUndrivable(ctx, l, err):
		h.retried(l.RunID) // ended canceled: its last commit released the lease
		return
	default:
		h.retryLater(ctx, l, o, err)
		return
	}
	if d.released {
		return // by the run's last commit
	}
	if err := h.cfg.Store.ReleaseLease(context.WithoutCancel(ctx), l); err != nil {
		h.log.Warn("release lease", "run", l.RunID, "token", l.Token, "err", err)
	}
}

// takeOver registers stop as the way to end this worker's drive of the
// run. A run this worker drives already, under an earlier lease, is one
// whose lease expired because its renewals failed and that this worker
// has just claimed again: the new lease fences the earlier drive off, so
// takeOver stops that drive and waits until it has let the run go. It
// reports false when ctx ended first.
func (h *Host) takeOver(ctx context.Context, runID string, stop context.CancelCauseFunc) bool {
	for {
		h.mu.Lock()
		prev, driven := h.leased[runID]
		_, active := h.active[runID]
		if !driven && !active {
			h.leased[runID] = stop
			h.mu.Unlock()
			return true
		}
		h.mu.Unlock()
		if prev != nil {
			prev(errLeaseLost)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// keepLease renews l every ttl/3 until ctx ends. When the store says the
// lease is lost (another worker claimed the run after it expired), it
// cancels the drive with errLeaseLost. Other errors (the store is
// unreachable) are logged and the renewal is tried again at the next
// tick: fenced writes keep the run safe if the lease expires meanwhile.
func (h *Host) keepLease(ctx context.Context, l store.Lease, ttl time.Duration, stop context.CancelCauseFunc) {
	t := time.NewTicker(max(ttl/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		err := h.cfg.Store.RenewLease(ctx, l, start.Add(ttl).UnixNano())
		if took := time.Since(start); took > ttl/3 {
			h.log.Warn("renew lease: the store was slow; the lease may expire before the next renewal", "run", l.RunID, "token", l.Token, "took", took.Round(time.Millisecond), "lease_ttl", ttl)
		}
		switch {
		case err == nil:
			h.recheckInbox(ctx, l.RunID)
		case errors.Is(err, store.ErrLeaseLost):
			stop(errLeaseLost)
			return
		case ctx.Err() != nil:
			return
		default:
			h.log.Warn("renew lease", "run", l.RunID, "token", l.Token, "err", err)
		}
	}
}

// recheckInbox hands the run, if it is active here, the settlements, the
// cancellation and the pause stored for it: those made through another worker,
// which could not deliver them. (One made through this process was
// delivered already; the scheduler ignores a completion it has seen.)
// So a run that executes for long, with an activity in flight, still
// gets them within a renewal period, not only when it next suspends.
func (h *Host) recheckInbox(ctx context.Context, runID string) {
	if !h.isActive(runID) {
		return
	}
	sets, err := h.cfg.Store.Settlements(ctx, runID)
	if err != nil {
		return // the next renewal tries again
	}
	for _, s := range sets {
		h.deliver(runID, settlementCompletion(s))
	}
	r, err := h.cfg.Store.Run(ctx, runID)
	if err == nil && r.Cancel != "" {
		h.deliver(runID, sched.Completion{Key: sched.CancelKey, Outcome: sched.Outcome{Err: r.Cancel}})
	}
	if err == nil {
		h.pauseActive(runID, r.IsPaused()) // paused or unpaused through another worker
	}
}

// defaultOwner names a worker: host name, process id and a random suffix,
// so that two workers never share a name.
func defaultOwner() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "worker"
	}
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", name, os.Getpid(), hex.EncodeToString(b[:]))
}
