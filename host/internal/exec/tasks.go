package exec

import (
	"time"

	"github.com/skeinrun/skein/host/internal/taskboard"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/store"
)

// Remote activity tasks, the run's side: a call of an activity no function
// in this process serves (Config.RemoteActivities) is queued as a task in
// the same commit that records its op as pending; a worker claims it
// through the API (taskapi.go), and its end reaches the run like a
// promise's settlement: at once if the run is active here, else through
// the store when the run is driven next.

// DefaultTaskLeaseTTL is the default of Config.TaskLeaseTTL.
const DefaultTaskLeaseTTL = 30 * time.Second

// queueTask queues the remote task of call c with the run's next commit,
// unless this run queued it already. The store keeps a task queued by an
// earlier execution as it is (a replay queues nothing new).
func (rs *RunState) queueTask(h Host, c activityCall) {
	if _, ok := rs.Remote[c.key]; ok {
		return
	}
	rs.Remote[c.key] = time.Now().UnixNano()
	// The task is named in the run's namespace: only that namespace's
	// workers claim it (store/namespace.go).
	t := store.Task{RunID: rs.Run.ID, Key: c.key, Name: store.Qualify(store.NamespaceOf(rs.Run.ID), c.name), Input: c.input,
		Options: abi.AppendOpOptions(nil, c.opts), Timeout: int64(c.opts.Timeout), Attempt: c.attempt}
	if tr := h.Config().Tracer; tr != nil {
		t.TraceParent = tr.OpTraceparent(rs.Run, c.key) // its attempts' spans are the op's children
	}
	if !c.resumed {
		// A new call: no task exists for it yet, so a claim waiting in
		// this process may take it as it is queued (taskboard.go).
		t.State = store.TaskQueued
	}
	rs.Batch.Tasks = append(rs.Batch.Tasks, t)
	// Look again once the newest call is no longer fresh: the run may
	// suspend. One timer per run, moved on by each call.
	if rs.remoteDue == nil {
		rs.remoteDue = time.AfterFunc(h.Config().IdleThreshold, rs.MB.Nudge)
	} else {
		rs.remoteDue.Reset(h.Config().IdleThreshold)
	}
}

// remoteFresh reports whether the run should stay active for a remote
// task: one was queued within IdleThreshold (with EvictNever, any). A run
// whose remote calls are older suspends, and the tasks' ends wake it.
func (rs *RunState) remoteFresh(h Host) bool {
	if len(rs.Remote) == 0 {
		return false
	}
	if h.Config().Evict == EvictNever {
		return true
	}
	since := time.Now().Add(-h.Config().IdleThreshold).UnixNano()
	for _, at := range rs.Remote {
		if at > since {
			return true
		}
	}
	return false
}

// reserveTasks gives the run's new tasks about to be committed to the
// claims waiting in this process (taskboard.go).
func (rs *RunState) reserveTasks(tasks []store.Task) []*taskboard.Waiter {
	if rs.Board == nil || len(tasks) == 0 {
		return nil
	}
	return rs.Board.Reserve(tasks, time.Now().UnixNano())
}

// tasksQueued tells the waiting claims that the run committed tasks.
func (rs *RunState) tasksQueued() {
	if rs.Board != nil {
		rs.Board.Notify()
	}
}
