package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// What reaches a run from outside its executions: settlements, a
// cancellation, the run timeout, and the wake-up of a suspended run.

// inbox queues what the store holds for the run beyond its journal: the
// settlements not yet delivered, the cancellation, the run timeout. A run
// without outcomes (its first execution) has no settlement to read: a
// settlement settles an op the run recorded (Store.Settle refuses any
// other key, and the host settles only a child's spawn or a task's call),
// so its read is skipped there.
func (h *Host) inbox(ctx context.Context, rs *runState, outs []store.Outcome) error {
	if len(outs) > 0 {
		sets, err := h.cfg.Store.Settlements(ctx, rs.Run.ID)
		if err != nil {
			return fmt.Errorf("drive %s: %w", rs.Run.ID, err)
		}
		for _, s := range sets {
			rs.MB.Put(settlementCompletion(s))
		}
	}
	delivered := false
	for _, o := range outs {
		delivered = delivered || o.Key == store.CancelKey
	}
	if delivered {
		return nil
	}
	if rs.Run.Cancel == "" && rs.Run.Deadline > 0 {
		if rs.World.ArmDeadline(h.execHost(), rs.RunState) {
			return nil
		}
		r, err := h.cfg.Store.RequestCancel(ctx, rs.Run.ID, timeoutReason(rs.Run))
		if err != nil {
			return fmt.Errorf("drive %s: run timeout: %w", rs.Run.ID, err)
		}
		rs.Run.Cancel = r.Cancel
	}
	if rs.Run.Cancel != "" {
		rs.MB.Put(sched.Completion{Key: sched.CancelKey, Outcome: sched.Outcome{Err: rs.Run.Cancel}})
	}
	return nil
}

// settlementCompletion is the completion that delivers s.
func settlementCompletion(s store.Settlement) sched.Completion {
	if s.Status != store.OutcomeOK {
		return sched.Completion{Key: s.Key, Outcome: sched.Outcome{Err: s.Error}, Attempts: s.Attempts}
	}
	return sched.Completion{Key: s.Key, Outcome: sched.Outcome{OK: true, Value: s.Value}, Attempts: s.Attempts}
}

func timeoutReason(r store.Run) string {
	return fmt.Sprintf("run timed out after %s", time.Duration(r.Deadline-r.CreatedAt.UnixNano()).Round(time.Millisecond))
}

// waiting reports whether a run that just suspended has something to
// receive already (a settlement or a cancellation that arrived while it
// was deciding to suspend), so it must be driven again at once.
func (h *Host) waiting(ctx context.Context, rs *runState) (bool, error) {
	if rs.MB.Len() > 0 {
		return true, nil
	}
	sets, err := h.cfg.Store.Settlements(ctx, rs.Run.ID)
	if err != nil {
		return false, fmt.Errorf("drive %s: %w", rs.Run.ID, err)
	}
	if len(sets) > 0 {
		return true, nil
	}
	r, err := h.cfg.Store.Run(ctx, rs.Run.ID)
	if err != nil {
		return false, fmt.Errorf("drive %s: %w", rs.Run.ID, err)
	}
	rs.Run.Cancel = r.Cancel
	if r.Cancel == "" {
		return false, nil
	}
	outs, err := h.cfg.Store.Outcomes(ctx, rs.Run.ID)
	if err != nil {
		return false, fmt.Errorf("drive %s: %w", rs.Run.ID, err)
	}
	for _, o := range outs {
		if o.Key == store.CancelKey {
			return false, nil
		}
	}
	return true, nil
}

// cancelWaits reports whether run id has a cancellation requested and not
// yet delivered.
func (h *Host) cancelWaits(ctx context.Context, id string) bool {
	r, err := h.cfg.Store.Run(ctx, id)
	if err != nil || r.Cancel == "" || r.Status.Terminal() {
		return false
	}
	_, err = h.cfg.Store.Outcome(ctx, id, store.CancelKey)
	return errors.Is(err, store.ErrNotFound)
}
