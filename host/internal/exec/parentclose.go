package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/skeinrun/skein/store"
)

// A parent's end decides its children: every child run that a run issued
// and whose end it has not received when it ends (completed, failed,
// canceled, continued) is canceled, or with the policy abandon
// (skein.ParentClose(skein.AbandonChild)) left running and marked
// abandoned. What each child gets is written in the commit that ends the
// parent (store.Batch.ParentEnded), so no worker and no crash can lose it;
// then the world delivers it (parentEnded). A diverged run has not ended:
// its children wait with it.

// queueParentEnded queues, for the commit that ends rs's run, what its end
// does to each child run it leaves unended, and returns it.
func QueueParentEnded(rs *RunState) []store.ParentEnd {
	if !rs.Run.Status.Terminal() || len(rs.children) == 0 {
		return nil
	}
	reason := fmt.Sprintf("parent run %s ended (%s)", rs.Run.ID, rs.Run.Status)
	keys := make([]string, 0, len(rs.children))
	for key := range rs.children {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	ends := make([]store.ParentEnd, 0, len(keys))
	for _, key := range keys {
		e := store.ParentEnd{RunID: rs.children[key], Reason: store.CleanText(reason)}
		if rs.abandons[key] {
			e = store.ParentEnd{RunID: e.RunID, Abandon: true}
		}
		ends = append(ends, e)
	}
	rs.Batch.ParentEnded = append(rs.Batch.ParentEnded, ends...)
	return ends
}

// parentEnded delivers the cancellations of ends, committed with the end
// of rs's run, to the child runs. Under Work a worker drives each child
// (the one that drives it now, or the next to claim it); a Drive (skein
// run) drives its canceled children to their end before it returns, so
// none is left running when the process exits. Abandoned children go on.
func (liveWorld) ParentEnded(ctx context.Context, h Host, rs *RunState, ends []store.ParentEnd) {
	byWork := rs.ByWork
	var canceled []string
	for _, e := range ends {
		if e.Abandon {
			h.Log().Info("child run abandoned: its parent ended", "run", rs.Run.ID, "child", e.RunID)
			continue
		}
		if _, err := h.Cancel(context.WithoutCancel(ctx), e.RunID, e.Reason); err != nil {
			if !errors.Is(err, ErrTerminal) {
				h.Log().Warn("cancel child run", "run", rs.Run.ID, "child", e.RunID, "err", err)
			}
			continue
		}
		h.DriveChild(ctx, rs, e.RunID)
		canceled = append(canceled, e.RunID)
	}
	if !byWork {
		rs.waitChildren(ctx, canceled)
	}
}

// parentEnded ends, in the simulation, each canceled child run that has
// not ended (one that suspended: every other ran to its end when it
// started): its cancellation reaches it just after its parent's end in
// virtual time, so a crash replay of the parent, which finds the child
// ended, gets its end after the parent's, as the run did.
func (w SimWorld) ParentEnded(ctx context.Context, h Host, rs *RunState, ends []store.ParentEnd) {
	for _, e := range ends {
		if e.Abandon {
			continue
		}
		cs := h.Simulator().Run(e.RunID, w.Run.Clock)
		cs.Clock = max(cs.Clock, w.Run.Clock+1)
		if _, err := h.Drive(ctx, e.RunID); err != nil && !IsDivergence(err) {
			h.Log().Warn("child run stopped", "run", rs.Run.ID, "child", e.RunID, "err", err)
		}
	}
}

// waitChildren waits until none of the child runs ids is driven for rs's
// run in this process, or ctx ends.
func (rs *RunState) waitChildren(ctx context.Context, ids []string) {
	for {
		rs.Mu.Lock()
		live := slices.ContainsFunc(ids, func(id string) bool { return rs.childLive[id] })
		if !live {
			rs.Mu.Unlock()
			return
		}
		if rs.childGone == nil {
			rs.childGone = make(chan struct{})
		}
		gone := rs.childGone
		rs.Mu.Unlock()
		select {
		case <-gone:
		case <-ctx.Done():
			return
		}
	}
}
