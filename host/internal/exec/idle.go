package exec

import (
	"context"
	"time"

	"github.com/skeinrun/skein/host/internal/sched"
)

// dispatch returns the next task to run, running idle points as needed:
// at each, the records so far are committed, completions are delivered,
// and when none is due the execution waits, suspends or is evicted.
func (x *Exec) dispatch(ctx context.Context) (sched.Dispatch, error) {
	if t := x.S.Current(); t != 0 {
		return sched.Dispatch{}, x.fail("task %d called next without waiting on anything (await, select, body_sleep or task_done first)", t)
	}
	for {
		if d, ok := x.S.Next(); ok {
			return d, nil
		}
		if x.S.Replaying() {
			if err := x.S.DeliverRound(); err != nil {
				return sched.Dispatch{}, x.schedErr(err)
			}
			continue
		}
		if err := x.idlePoint(ctx); err != nil {
			return sched.Dispatch{}, err
		}
	}
}

// idlePoint commits the records so far, then delivers the completions
// that arrived, waiting for one if none has.
func (x *Exec) idlePoint(ctx context.Context) error {
	if !x.fx.commits() {
		return x.stop(Suspended, nil) // the journal ends here
	}
	if err := x.flush(ctx); err != nil {
		return err
	}
	x.startCalls()
	if x.h.Config().Evict == EvictAlways && x.newRecords > 0 && !x.S.InBody() && !x.S.Held() {
		return x.stop(Evicted, nil)
	}
	if x.pauseHere() {
		return x.stop(Paused, nil)
	}
	cs := x.rs.MB.drain()
	if len(cs) == 0 && !x.S.Held() {
		if err := x.fx.idle(ctx); err != nil {
			return err
		}
		cs = x.rs.MB.drain()
	}
	stale := x.S.DeliverLive(cs)
	x.rs.delivered(cs, stale)
	if ok, reason := x.S.Canceled(); ok && !x.canceled {
		x.canceled = true
		x.wd.cancelSeen.Store(true)
		x.rs.MB.cancelTaken()
		x.blocking(func() { x.onCancel(ctx, reason) })
	}
	return nil
}

// pauseHere reports whether the execution stops here for the run's
// pause: one was requested, and nothing in this process is in flight (a
// step body, held step outcomes, an activity call), so stopping runs
// nothing twice; or CancelGrace has passed since, and what is in flight
// is let go (a step body runs again, an activity is called again, after
// the replay).
func (x *Exec) pauseHere() bool {
	since := x.rs.MB.pausedSince()
	if since.IsZero() || !x.fx.hardCancels() {
		return false
	}
	quiet := !x.S.InBody() && !x.S.Held() && len(x.rs.activities) == 0
	return quiet || time.Since(since) >= CancelGrace
}

// startCalls starts the in-process activity calls issued since the last
// idle point, now that their pending records and everything the workflow
// saw before issuing them are committed: an activity never acts on a
// result that a crash could still take back.
func (x *Exec) startCalls() {
	rs := x.rs
	for _, c := range rs.starts {
		rs.startActivity(x.h, c)
	}
	clear(rs.starts)
	rs.starts = rs.starts[:0]
}

// onCancel stops what the delivered cancellation failed (timers,
// promises) and cancels the child runs still pending.
func (x *Exec) onCancel(ctx context.Context, reason string) {
	rs := x.rs
	for key, h := range rs.handles {
		h.Stop()
		delete(rs.handles, key)
		delete(rs.timers, key)
	}
	clear(rs.promises)
	x.h.CancelCalls(ctx, rs, reason)
	for key, id := range rs.children {
		x.fx.cancelChild(ctx, key, id, "parent run canceled: "+reason)
	}
}

// errDeadlock is the failure of a run whose tasks all wait on nothing
// that can settle.
const errDeadlock = "deadlock: every task waits and nothing can settle what they wait for"

// suspend ends the execution until wake (0: until a settlement).
func (x *Exec) suspend(wake int64) error {
	x.rs.Run.WakeAt = wake
	return x.stop(Suspended, nil)
}

// flush commits the queued records.
func (x *Exec) flush(ctx context.Context) error {
	var err error
	x.blocking(func() { err = x.rs.Flush(ctx, x.h.Config().Store) })
	if err != nil {
		return x.stop(Unrecorded, err)
	}
	return nil
}
