package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// A run must end even when what it would record cannot be stored, and a
// cancellation must end a run even when the run can no longer be driven:
// otherwise a module could make a run that is driven again with backoff
// for ever and that no one can stop (docs/security.md).

// unstorablePrefix starts the error of a run ended by driveFailed.
const unstorablePrefix = "the run's records cannot be stored, so it ends here: "

// driveFailed returns the drive's error err, unless err says that the
// run's records hold a text no store can keep (store.ErrInvalidText):
// no later drive could commit them either, so the run ends failed here,
// with that cause as its error, and what was committed before stays. The
// host makes every text it records valid, so this is a last resort for a
// text it missed.
func (h *Host) driveFailed(ctx context.Context, rs *runState, err error) (store.Run, error) {
	if !errors.Is(err, store.ErrInvalidText) {
		return rs.Run, err
	}
	_ = rs.Wait() // the commit in flight failed, or is the one that did
	rs.Mu.Lock()
	rs.Late = nil
	rs.Mu.Unlock()
	rs.Batch = store.Batch{}
	rs.Run.Status, rs.Run.WakeAt, rs.Run.Result = store.RunFailed, 0, nil
	rs.Run.Error = unstorablePrefix + err.Error()
	h.log.Error("run failed: its records cannot be stored", "run", rs.Run.ID, "err", err)
	if ferr := h.finish(ctx, rs); ferr != nil {
		return rs.Run, fmt.Errorf("%w; ending the run failed too: %w", err, ferr)
	}
	return rs.Run, nil
}

// cancelUndrivable ends canceled, under the lease l that Work holds, a
// run whose cancellation was requested and whose drive just failed with
// driveErr: the workflow cannot take the cancellation if it cannot be
// driven, and a cancel always ends a run. It reports whether it ended
// the run. The run's parent gets its end, its activity tasks and child
// runs are canceled, as for any canceled run.
func (h *Host) cancelUndrivable(ctx context.Context, l store.Lease, driveErr error) bool {
	ctx = context.WithoutCancel(ctx)
	r, err := h.cfg.Store.Run(ctx, l.RunID)
	if err != nil || r.Cancel == "" || r.Status.Terminal() {
		return false
	}
	rs := newRunState(r, DriveOptions{hold: &leaseHold{lease: l}})
	defer rs.Close()
	reason := fmt.Sprintf("%s (ended without executing: the run could not be driven: %v)", r.Cancel, driveErr)
	rs.Run.Status, rs.Run.WakeAt, rs.Run.Error = store.RunCanceled, 0, sched.CanceledPrefix+reason
	if err := h.finish(ctx, rs); err != nil {
		h.log.Warn("end a canceled run that cannot be driven", "run", l.RunID, "err", err)
		return false
	}
	if err := h.cfg.Store.CancelTasks(ctx, r.ID, "the run was canceled: "+r.Cancel); err != nil {
		h.log.Warn("cancel activity tasks", "run", r.ID, "err", err)
	}
	h.cancelChildRuns(ctx, r.ID, "parent run canceled: "+r.Cancel)
	h.log.Warn("canceled run ended without executing: it could not be driven", "run", r.ID, "err", driveErr)
	return true
}

// cancelChildRuns requests the cancellation of every child run the
// journal of run id records as started.
func (h *Host) cancelChildRuns(ctx context.Context, id, reason string) {
	outs, err := h.cfg.Store.Outcomes(ctx, id)
	if err != nil {
		h.log.Warn("cancel child runs: read the journal", "run", id, "err", err)
		return
	}
	for _, o := range outs {
		if o.Kind != "child" {
			continue
		}
		child := ChildRunID(id, o.Key)
		if _, err := h.Cancel(ctx, child, reason); err != nil && !errors.Is(err, ErrTerminal) && !errors.Is(err, ErrNotFound) {
			h.log.Warn("cancel child run", "run", id, "child", child, "err", err)
		}
	}
}
