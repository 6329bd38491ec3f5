package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/store"
)

// Holding runs: pause, unpause, and resuming a run on another module
// through the worker pool.

// Pause holds a run: it is not executed until Unpause (or ResumeOn).
// The run keeps its status; its timers that fall due and the
// settlements and cancellation that reach it are stored as usual and
// delivered once it is unpaused. An execution in progress in this
// process stops at its next idle point where nothing is in flight (a
// step body, an activity call), committing what it recorded, or is
// stopped after CancelGrace if its code does not get there; one in
// another worker sharing the store stops within a lease renewal period
// (WorkOptions.LeaseTTL/3) the same way. by says who paused the run (the
// API's caller, "retry policy"), reason why. Pausing a paused run keeps
// its first pause. An unknown run is ErrNotFound, an ended one
// ErrTerminal.
func (h *Host) Pause(ctx context.Context, runID, by, reason string) (store.Run, error) {
	if by == "" {
		by = "host"
	}
	r, err := h.cfg.Store.PauseRun(ctx, runID, store.CleanText(by), store.CleanText(reason), time.Now().UnixNano())
	if errors.Is(err, store.ErrEnded) {
		return r, fmt.Errorf("pause %s: %w: %w", runID, err, ErrTerminal)
	}
	if err != nil {
		return r, fmt.Errorf("pause %s: %w", runID, err)
	}
	h.pauseActive(runID, true)
	h.log.Info("run paused", "run", runID, "by", r.Paused.By, "reason", r.Paused.Reason)
	return r, nil
}

// Unpause lets a paused run execute again: it is due at once if it was
// due when paused or became due since (a timer, a settlement), and a
// worker of this process is woken for it. An execution that had not
// stopped yet goes on. A run that is not paused is returned as it is; an
// unknown run is ErrNotFound.
func (h *Host) Unpause(ctx context.Context, runID string) (store.Run, error) {
	r, err := h.cfg.Store.UnpauseRun(ctx, runID)
	if err != nil {
		return r, fmt.Errorf("unpause %s: %w", runID, err)
	}
	h.pauseActive(runID, false)
	h.signal()
	return r, nil
}

// pauseActive hands a pause (on) or its withdrawal to the execution of
// the run in this process, if any.
func (h *Host) pauseActive(runID string, on bool) {
	h.mu.Lock()
	rs, ok := h.active[runID]
	h.mu.Unlock()
	switch {
	case !ok:
	case on:
		rs.MB.Pause()
	default:
		rs.MB.Unpause()
	}
}

// resumeReleaseWait bounds how long ResumeOn waits for the execution of
// a run it paused to stop: the pause's grace, then a lease's lifetime
// for a worker that died holding it.
const resumeReleaseWait = CancelGrace + DefaultLeaseTTL

// ResumeOn points a suspended, paused, diverged or failed run at another
// deployed module (by name or hash; empty: its own), clears its pause,
// and lets the worker pool (Work) drive it: the run replays its history
// against the new code, as Resume does in this call. The run is held
// while it is switched (paused, if it was not, until no execution holds
// it; at most resumeReleaseWait), so no worker executes it on the old
// code meanwhile. It returns the run as stored, running and unpaused. A
// completed, canceled or continued run is ErrTerminal; a module without
// the run's workflow is refused.
func (h *Host) ResumeOn(ctx context.Context, runID, module string) (store.Run, error) {
	st := h.cfg.Store
	run, hash, err := h.resumable(ctx, runID, module)
	if err != nil {
		return run, err
	}
	if hash == "" {
		hash = run.ModuleHash
	}
	if !run.IsPaused() && !run.Status.Terminal() {
		if _, err := h.Pause(ctx, runID, "resume", "switching to module "+shortHash(hash)); err != nil {
			return run, fmt.Errorf("resume %s: %w", runID, err)
		}
	}
	if run, err = h.waitReleased(ctx, runID); err != nil {
		return run, fmt.Errorf("resume %s: %w", runID, err)
	}
	if run.Status.Final() { // it ended before its execution stopped
		r, _ := st.UnpauseRun(context.WithoutCancel(ctx), runID)
		return r, fmt.Errorf("resume %s: the run is %s: %w", runID, run.Status, ErrTerminal)
	}
	// Due at once, as a run left running by a crashed worker is: the
	// next execution replays the journal on the new module.
	run.ModuleHash, run.Status, run.Result, run.Error, run.WakeAt = hash, store.RunRunning, nil, "", 0
	run.UpdatedAt = time.Now()
	if err := st.Commit(ctx, store.Batch{Runs: []store.Run{run}}); err != nil {
		return run, fmt.Errorf("resume %s: %w", runID, err)
	}
	r, err := h.Unpause(ctx, runID)
	if err != nil {
		return r, fmt.Errorf("resume %s: %w", runID, err)
	}
	h.log.Info("run resumed on a module", "run", runID, "module", shortHash(hash))
	return r, nil
}

// waitReleased returns the run once no worker holds its lease, reading
// it every leaseRetry, for at most resumeReleaseWait. A paused run (or
// one that cannot be claimed: failed) stays unheld once released.
func (h *Host) waitReleased(ctx context.Context, runID string) (store.Run, error) {
	deadline := time.Now().Add(resumeReleaseWait)
	for {
		r, err := h.cfg.Store.Run(ctx, runID)
		if err != nil {
			return r, err
		}
		now := time.Now()
		if r.LeaseOwner == "" || r.LeaseExpiry <= now.UnixNano() {
			return r, nil
		}
		held := &store.LeaseHeldError{Lease: store.Lease{RunID: runID, Owner: r.LeaseOwner, Token: r.LeaseToken, Expiry: r.LeaseExpiry}}
		if now.After(deadline) {
			return r, fmt.Errorf("%w; its execution did not stop within %s", held, resumeReleaseWait)
		}
		t := time.NewTimer(leaseRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, fmt.Errorf("%w; stopped waiting: %w", held, ctx.Err())
		case <-t.C:
		}
	}
}

// pausedStop ends a drive whose execution stopped for the run's pause:
// what it recorded is committed with the run's status as it was
// (running: due again once unpaused, replaying its journal).
func (h *Host) pausedStop(ctx context.Context, rs *runState, x *exec.Exec) (store.Run, error) {
	rs.Dropped(x.LastSeq)
	if err := h.commitRun(ctx, rs); err != nil {
		return rs.Run, err
	}
	h.log.Info("run paused: its execution stopped", "run", rs.Run.ID, "how", pauseHow(x))
	r, err := h.cfg.Store.Run(context.WithoutCancel(ctx), rs.Run.ID)
	if err != nil {
		return rs.Run, fmt.Errorf("drive %s: %w", rs.Run.ID, err)
	}
	return r, nil
}

// pauseHow says how a paused execution stopped, for the log.
func pauseHow(x *exec.Exec) string {
	if x.Failure != nil {
		return x.Failure.Error()
	}
	return "at an idle point"
}
