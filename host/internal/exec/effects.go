package exec

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// world is where a run's effects happen: the real world (liveWorld), or
// the simulation of Config.Simulation (simWorld, simfx.go), which
// `skein check` and skeintest run workflows in. Drive picks one per run;
// nothing else asks which it is.
type world interface {
	// effects returns the effects of one execution of the run.
	effects(x *Exec) effects
	// armDeadline arms the run's timeout (Run.Deadline); it reports false
	// when it passed already.
	ArmDeadline(h Host, rs *RunState) bool
	// settlesParent reports whether a child run's end is delivered to its
	// parent through the store (a simulated parent schedules it itself).
	SettlesParent() bool
	// parentEnded delivers what the end of rs's run, just committed, does
	// to its unended child runs (parentclose.go).
	ParentEnded(ctx context.Context, h Host, rs *RunState, ends []store.ParentEnd)
}

// effects is what one execution of a run asks of the world: its clock,
// timers, step bodies' time and waits, activity calls, child runs, and
// waiting at an idle point for something to settle.
type effects interface {
	// now is the scheduler's clock.
	now() int64
	// recorded is told of each journal record the execution makes (o as
	// the store keeps r), and issued of each durable op.
	recorded(o store.Outcome, r sched.Record)
	issued(key, kind, fn string, tid sched.TaskID)
	// bodyStarted is told that an attempt of a step body starts.
	bodyStarted(key string, attempt int)
	// bodyNow and bodyRand are real_now and real_rand in a step body.
	bodyNow() int64
	bodyRand(b []byte)
	// bodyWait starts a wait of d in task tid's step body: body_sleep
	// (what "body"), or the backoff before a retry (what "backoff").
	bodyWait(tid sched.TaskID, d time.Duration, what string)
	// backoff is the wait before attempt+1 of a step under opts.
	backoff(b *stepBody, key string, attempt int) time.Duration
	// stepEnded is told that a step body ended with out; it reports true
	// when it delivers the outcome itself, later.
	stepEnded(tid sched.TaskID, p sched.PromiseID, out sched.Outcome) (bool, error)
	// armTimer arms a durable timer.
	armTimer(key string, deadline int64)
	// call starts an activity call; it fails the execution when the
	// activity is not registered.
	call(c activityCall) error
	// prepareChild fills in a child run about to be created.
	prepareChild(r *store.Run)
	// child drives a child run the op at key created (or found).
	child(ctx context.Context, key string, child store.Run)
	// commits reports whether the execution's records are committed to
	// the store: the live world and the simulation; a verifying replay
	// and an upgrade check record nothing, and their journal ends at
	// their first live idle point.
	commits() bool
	// unsettled decides what becomes of an op the journal does not
	// settle (res.New, or recorded pending): opGo starts it as usual,
	// opWait leaves it pending and starts nothing, opStop ends the
	// execution suspended; an error (nondeterminism) ends it diverged.
	unsettled(kind abi.OpKind, fn string, res sched.OpResult, replaying bool) (opAction, error)
	// promised is told of each external promise the execution issues,
	// with the JSON Schema of its value (none: nil).
	promised(key string, schema []byte)
	// cancelChild cancels a pending child run for its canceled parent.
	cancelChild(ctx context.Context, key, id, reason string)
	// idle waits until a completion is in the mailbox, or ends the
	// execution (suspended, or failed by a deadlock).
	idle(ctx context.Context) error
	// hardCancels reports whether a cancellation the workflow does not
	// take in time stops the execution (CancelGrace).
	hardCancels() bool
	// spawned is told that task parent started task child (spawn or
	// branch); observed that task tid learned that promise p settled
	// first of the n it waited on (n > 1: a choice made by Select).
	spawned(parent, child sched.TaskID)
	observed(tid sched.TaskID, p sched.PromiseID, n int)
}

// opAction is what an execution does with an op the journal does not
// settle (effects.unsettled).
type opAction int

const (
	opGo   opAction = iota // start it as usual
	opWait                 // leave it pending, start nothing
	opStop                 // end the execution suspended: the run would go on with new work
)

// verifyWorld is the world of a verifying replay (Replay): the live
// world's clock, but nothing recorded and nothing started; an op the
// journal does not hold is nondeterminism, one recorded pending stays
// pending.
type VerifyWorld struct{ liveWorld }

func (VerifyWorld) effects(x *Exec) effects { return verifyEffects{liveEffects{x: x}} }

// verifyEffects are the effects of a verifying replay.
type verifyEffects struct{ liveEffects }

func (verifyEffects) recorded(store.Outcome, sched.Record) {}
func (verifyEffects) commits() bool                        { return false }
func (verifyEffects) unsettled(kind abi.OpKind, fn string, res sched.OpResult, _ bool) (opAction, error) {
	if res.New {
		return opGo, &sched.NondeterminismError{Expected: "only recorded ops", Got: fmt.Sprintf("%s %q at key %q, which the journal does not record", kind, fn, res.Key)}
	}
	return opWait, nil // recorded as pending: a verifying replay starts nothing
}

// liveWorld is the real world: wall-clock timers, activities on their
// own goroutines, child runs driven as runs.
type liveWorld struct{}

func (liveWorld) effects(x *Exec) effects { return liveEffects{x: x} }
func (liveWorld) SettlesParent() bool     { return true }

func (liveWorld) ArmDeadline(h Host, rs *RunState) bool {
	d := time.Until(time.Unix(0, rs.Run.Deadline))
	if d <= 0 {
		return false
	}
	id, reason := rs.Run.ID, TimeoutReason(rs.Run)
	rs.deadline = time.AfterFunc(d, func() {
		if _, err := h.Cancel(context.Background(), id, reason); err != nil && !errors.Is(err, ErrTerminal) {
			h.Log().Warn("run timeout: cancel", "run", id, "err", err)
		}
	})
	return true
}

// liveEffects are the effects of an execution in the real world.
type liveEffects struct{ x *Exec }

func (liveEffects) now() int64                                 { return realNow() }
func (f liveEffects) recorded(_ store.Outcome, r sched.Record) { f.x.h.EmitRecord(f.x.rs.Run, r) }
func (liveEffects) commits() bool                              { return true }
func (liveEffects) unsettled(abi.OpKind, string, sched.OpResult, bool) (opAction, error) {
	return opGo, nil
}
func (liveEffects) issued(string, string, string, sched.TaskID) {}
func (liveEffects) bodyStarted(string, int)                     {}
func (liveEffects) bodyNow() int64                              { return time.Now().UnixNano() }
func (liveEffects) bodyRand(b []byte)                           { rand.Read(b) }
func (liveEffects) hardCancels() bool                           { return true }
func (liveEffects) spawned(sched.TaskID, sched.TaskID)          {}
func (liveEffects) observed(sched.TaskID, sched.PromiseID, int) {}
func (liveEffects) prepareChild(*store.Run)                     {}
func (liveEffects) promised(string, []byte)                     {}
func (f liveEffects) armTimer(key string, d int64)              { f.x.rs.armTimer(key, d) }

func (f liveEffects) call(c activityCall) error {
	x := f.x
	if c.fn = x.h.Activity(c.name); c.fn == nil {
		if x.h.Config().RemoteActivities {
			x.rs.queueTask(x.h, c)
			return nil
		}
		return x.fail("activity %q is not registered on this host (called at key %q)", c.name, c.key)
	}
	// It starts once the call's pending record, and every outcome the
	// workflow saw before making it, are committed (idlePoint).
	x.rs.starts = append(x.rs.starts, c)
	return nil
}

func (f liveEffects) bodyWait(tid sched.TaskID, d time.Duration, _ string) {
	f.x.rs.bodyWait(tid, d)
}

func (liveEffects) backoff(b *stepBody, _ string, attempt int) time.Duration {
	return Backoff(b.opts, attempt-1)
}

func (liveEffects) stepEnded(sched.TaskID, sched.PromiseID, sched.Outcome) (bool, error) {
	return false, nil
}

func (f liveEffects) child(ctx context.Context, key string, child store.Run) {
	if child.Status.Terminal() {
		f.x.rs.MB.Put(sched.Completion{Key: key, Outcome: ChildOutcome(child)})
		return
	}
	f.x.driveChild(child.ID)
}

// cancelChild records the cancellation before the parent goes on, and
// drives the child again if its drive had just stopped (it suspended
// before the request was stored): a child left suspended would never
// hear of it.
func (f liveEffects) cancelChild(ctx context.Context, key, id, reason string) {
	x := f.x
	_, err := x.h.Cancel(context.WithoutCancel(ctx), id, reason)
	switch {
	case errors.Is(err, ErrTerminal):
	case err != nil:
		x.h.Log().Warn("cancel child run", "run", x.rs.Run.ID, "key", key, "child", id, "err", err)
	default:
		x.driveChild(id)
	}
}

// idle blocks until a completion arrives, or suspends the run when
// nothing in this process will settle soon.
func (f liveEffects) idle(ctx context.Context) error {
	x, rs := f.x, f.x.rs
	for rs.MB.Len() == 0 && !x.pauseHere() {
		busy := x.S.InBody() || len(rs.activities) > 0 || rs.bodyWaits > 0 || rs.liveChildren() > 0 || rs.remoteFresh(x.h)
		if !busy {
			earliest := int64(math.MaxInt64)
			for _, d := range rs.timers {
				earliest = min(earliest, d)
			}
			switch {
			case len(rs.timers) == 0 && len(rs.promises) == 0 && len(rs.children) == 0 && len(rs.Remote) == 0:
				return x.fail(errDeadlock)
			case len(rs.timers) == 0:
				return x.suspend(0)
			case x.h.Config().Evict != EvictNever && time.Until(time.Unix(0, earliest)) > x.h.Config().IdleThreshold:
				return x.suspend(earliest)
			}
		}
		var err error
		x.blocking(func() { err = rs.MB.waitOnce(ctx) })
		if err != nil {
			return x.stop(Failed, fmt.Errorf("interrupted while waiting: %w", err))
		}
	}
	return nil
}
