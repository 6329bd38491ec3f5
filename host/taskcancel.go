package host

import (
	"context"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// cancelTasks cancels the run's remote tasks still open (the run ended
// without waiting for them, or it was canceled), so that their workers
// stop.
func (h *Host) cancelTasks(ctx context.Context, rs *exec.RunState, reason string) {
	if len(rs.Remote) == 0 {
		return
	}
	if err := h.cfg.Store.CancelTasks(context.WithoutCancel(ctx), rs.Run.ID, reason); err != nil {
		h.log.Warn("cancel activity tasks", "run", rs.Run.ID, "err", err)
	}
}

// cancelCalls is the run's cancellation for its remote calls: their
// tasks are canceled, and each call whose task this canceled fails with
// the cancellation error at the next idle point, as a canceled sleep or
// promise does (a call whose worker had ended it gets that end instead).
func (h *Host) cancelCalls(ctx context.Context, rs *exec.RunState, reason string) {
	if len(rs.Remote) == 0 {
		return
	}
	h.cancelTasks(ctx, rs, "the run was canceled: "+reason)
	ts, err := h.cfg.Store.Tasks(context.WithoutCancel(ctx), rs.Run.ID)
	if err != nil {
		h.log.Warn("cancel activity tasks: read them", "run", rs.Run.ID, "err", err)
		return
	}
	for _, t := range ts {
		if _, issued := rs.Remote[t.Key]; issued && t.State == store.TaskCanceled {
			rs.MB.Put(sched.Completion{Key: t.Key, Outcome: sched.Outcome{Err: sched.CanceledPrefix + reason}, Attempts: t.Attempt})
		}
	}
}
