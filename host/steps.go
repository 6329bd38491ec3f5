package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/sched"
)

// flushEvery bounds how many records wait in memory between idle points.
const flushEvery = 1024

// stepDone ends an attempt of a step body: retried under its policy,
// settled, or (in a simulation) delivered after a seeded duration.
func (x *exec) stepDone(ctx context.Context, stack []uint64) error {
	tid, p := sched.TaskID(u32(stack, 0)), sched.PromiseID(u32(stack, 1))
	status := u32(stack, 2)
	fatal := status == abi.StatusFatal
	if fatal {
		status = abi.StatusError
	}
	data, err := x.read(u32(stack, 3), u32(stack, 4))
	if err != nil {
		return err
	}
	if err := x.checkPayload(fmt.Sprintf("the value of step promise %d", p), len(data)); err != nil {
		return err
	}
	out, ok := fromABI(status, data, false)
	if !ok {
		return x.fail("step_done with unknown status %d", u32(stack, 2))
	}
	if b := x.bodies[p]; b != nil {
		if t := time.Duration(b.opts.Timeout); t > 0 && time.Since(b.start) > t {
			out = sched.Outcome{Err: fmt.Sprintf("step timed out: its body ran %s, longer than its timeout of %s", time.Since(b.start).Round(time.Millisecond), t)}
		}
		if !out.OK && !fatal && retryable(b.opts, errors.New(out.Err), x.s.Attempts(p)) {
			stack[0] = uint64(abi.StepRetry)
			return x.retryStep(ctx, tid, p, b)
		}
		delete(x.bodies, p)
	}
	if sim := x.rs.sim; sim != nil && !x.s.BodyWaited(tid) {
		// In a simulation every step body takes time: its outcome is
		// delivered like a held one, after a seeded duration.
		key := x.s.BodyKey(tid)
		id := fmt.Sprintf("step:%s#%d", key, x.s.Attempts(p))
		if err := x.s.StepDefer(tid, p); err != nil {
			return x.schedErr(err)
		}
		sim.schedule(id, time.Duration(sim.frac(id)*float64(x.h.sim.cfg.StepTime)), sched.Completion{Key: key, Outcome: out})
		stack[0] = uint64(abi.StepAwait)
		return nil
	}
	settled, err := x.s.StepDone(tid, p, out)
	if err != nil {
		return x.schedErr(err)
	}
	stack[0] = uint64(abi.StepAwait)
	if settled {
		stack[0] = uint64(abi.StepSettled)
	}
	if len(x.rs.batch.Outcomes) >= flushEvery && !x.s.Replaying() {
		x.blocking(func() { err = x.rs.flushAsync(x.h.cfg.Store) })
		if err != nil {
			return x.stop(stFailed, err)
		}
	}
	return nil
}

// retryStep starts the next attempt of a step body after its backoff;
// the attempt count is durable before the attempt runs.
func (x *exec) retryStep(ctx context.Context, tid sched.TaskID, p sched.PromiseID, b *stepBody) error {
	attempt, err := x.s.StepRetry(tid, p)
	if err != nil {
		return x.schedErr(err)
	}
	if sim := x.rs.sim; sim != nil {
		x.simBodyStart(x.s.BodyKey(tid), attempt)
		x.bodyWait(tid, simBackoff(b.opts, attempt-1, sim.frac(fmt.Sprintf("backoff:%s#%d", x.s.BodyKey(tid), attempt))), "backoff", false)
	} else {
		x.rs.bodyWait(tid, backoff(b.opts, attempt-1))
	}
	if err := x.flush(ctx); err != nil {
		return err
	}
	b.start = time.Now()
	return nil
}

// taskDone ends a task; the root task's end ends the execution.
func (x *exec) taskDone(ctx context.Context, stack []uint64) error {
	tid := sched.TaskID(u32(stack, 0))
	status := u32(stack, 1)
	data, err := x.read(u32(stack, 2), u32(stack, 3))
	if err != nil {
		return err
	}
	if err := x.checkPayload(fmt.Sprintf("the result of task %d", tid), len(data)); err != nil {
		return err
	}
	out, ok := fromABI(status, data, true)
	if !ok {
		return x.fail("task_done with unknown status %d", status)
	}
	if err := x.s.TaskDone(tid, out); err != nil {
		return x.schedErr(err)
	}
	if tid != sched.Root {
		x.liveTasks--
		return nil
	}
	x.result = out
	return x.stop(stDone, nil)
}

func (x *exec) bodySleep(ctx context.Context, stack []uint64) error {
	tid := sched.TaskID(u32(stack, 0))
	d := time.Duration(int64(stack[1]))
	if err := x.s.BodyWait(tid); err != nil {
		return x.schedErr(err)
	}
	x.bodyWait(tid, d, "body", true)
	return nil
}

// bodyWait starts a wait inside a step body: real, or in a simulation a
// seeded virtual duration (scaled: uniform in [0, 2d)).
func (x *exec) bodyWait(tid sched.TaskID, d time.Duration, what string, scale bool) {
	sim := x.rs.sim
	if sim == nil {
		x.rs.bodyWait(tid, d)
		return
	}
	id := x.simBodyID(tid, what)
	if scale {
		d = time.Duration(sim.frac(id) * 2 * float64(d))
	}
	x.rs.bodyWaits++
	sim.schedule(id, d, sched.Completion{Task: tid})
}

// armTimer arms a durable timer: real, or a simulation event.
func (x *exec) armTimer(key string, deadline int64) {
	sim := x.rs.sim
	if sim == nil {
		x.rs.armTimer(key, deadline)
		return
	}
	if _, ok := x.rs.timers[key]; ok {
		return
	}
	x.rs.timers[key] = deadline
	sim.at("timer:"+key, deadline, sched.Completion{Key: key, Outcome: sched.Outcome{OK: true, Value: []byte("null")}})
}

// simBodyStart notes when an attempt of a step body starts: the first
// time in any execution (kept across crashes) and in this one.
func (x *exec) simBodyStart(key string, attempt int) {
	id := fmt.Sprintf("%s#%d", key, attempt)
	sim := x.rs.sim
	if _, ok := sim.ends["start:"+id]; !ok {
		sim.ends["start:"+id] = sim.clock
	}
	if x.simStarts == nil {
		x.simStarts = map[string]int64{}
	}
	x.simStarts[id] = sim.clock
}
