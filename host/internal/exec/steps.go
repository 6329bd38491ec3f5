package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/sched"
)

// flushEvery bounds how many records wait in memory between idle points.
const flushEvery = 1024

// stepDone ends an attempt of a step body: retried under its policy,
// settled, or (in a simulation) delivered after a seeded duration.
func (x *Exec) stepDone(ctx context.Context, stack []uint64) error {
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
	if err := x.checkPayload(len(data), func() string { return fmt.Sprintf("the value of step promise %d", p) }); err != nil {
		return err
	}
	out, ok := fromABI(status, data, false)
	if !ok {
		return x.fail("step_done with unknown status %d", u32(stack, 2))
	}
	if out.OK {
		if err := x.checkValue(func() string { return fmt.Sprintf("the value of step %q", x.S.BodyKey(tid)) }, data); err != nil {
			return err
		}
	}
	if b := x.bodies[p]; b != nil {
		if t := time.Duration(b.opts.Timeout); t > 0 && time.Since(b.start) > t {
			out = sched.Outcome{Err: fmt.Sprintf("step timed out: its body ran %s, longer than its timeout of %s", time.Since(b.start).Round(time.Millisecond), t)}
		}
		x.bodyAttempt(x.S.BodyKey(tid), x.S.Attempts(p), 0, time.Now().UnixNano(), out.Err)
		if !out.OK && !fatal && Retryable(b.opts, errors.New(out.Err), x.S.Attempts(p)) {
			stack[0] = uint64(abi.StepRetry)
			return x.retryStep(ctx, tid, p, b)
		}
		if !out.OK && !fatal && x.fx.hardCancels() && Exhausted(b.opts, errors.New(out.Err), x.S.Attempts(p)) {
			return x.pauseStep(ctx, p, x.S.BodyKey(tid), out.Err)
		}
		delete(x.bodies, p)
	}
	if later, err := x.fx.stepEnded(tid, p, out); err != nil {
		return x.schedErr(err)
	} else if later {
		stack[0] = uint64(abi.StepAwait)
		return nil
	}
	settled, err := x.S.StepDone(tid, p, out)
	if err != nil {
		return x.schedErr(err)
	}
	stack[0] = uint64(abi.StepAwait)
	if settled {
		stack[0] = uint64(abi.StepSettled)
	}
	if len(x.rs.Batch.Outcomes) >= flushEvery && !x.S.Replaying() && x.fx.commits() {
		x.blocking(func() { err = x.rs.FlushAsync(x.h) })
		if err != nil {
			return x.stop(Unrecorded, err)
		}
	}
	return nil
}

// retryStep starts the next attempt of a step body after its backoff;
// the attempt count is durable before the attempt runs.
func (x *Exec) retryStep(ctx context.Context, tid sched.TaskID, p sched.PromiseID, b *stepBody) error {
	attempt, err := x.S.StepRetry(tid, p)
	if err != nil {
		return x.schedErr(err)
	}
	key := x.S.BodyKey(tid)
	x.fx.bodyStarted(key, attempt)
	wait := x.fx.backoff(b, key, attempt)
	// The next attempt starts once its backoff has passed: the time is
	// taken before the wait is armed, so the attempt cannot end before it.
	next := time.Now().Add(wait)
	x.fx.bodyWait(tid, wait, "backoff")
	x.bodyAttempt(key, attempt, next.UnixNano(), 0, "")
	if err := x.flush(ctx); err != nil {
		return err
	}
	b.start = time.Now()
	return nil
}

// taskDone ends a task; the root task's end ends the execution.
func (x *Exec) taskDone(ctx context.Context, stack []uint64) error {
	tid := sched.TaskID(u32(stack, 0))
	status := u32(stack, 1)
	data, err := x.read(u32(stack, 2), u32(stack, 3))
	if err != nil {
		return err
	}
	if err := x.checkPayload(len(data), func() string { return fmt.Sprintf("the result of task %d", tid) }); err != nil {
		return err
	}
	out, ok := fromABI(status, data, true)
	if !ok {
		return x.fail("task_done with unknown status %d", status)
	}
	if out.OK {
		if err := x.checkValue(func() string { return fmt.Sprintf("the result of task %d", tid) }, data); err != nil {
			return err
		}
	}
	if err := x.S.TaskDone(tid, out); err != nil {
		return x.schedErr(err)
	}
	if tid != sched.Root {
		x.liveTasks--
		return nil
	}
	x.Result = out
	return x.stop(Done, nil)
}

func (x *Exec) bodySleep(ctx context.Context, stack []uint64) error {
	tid := sched.TaskID(u32(stack, 0))
	d := time.Duration(int64(stack[1]))
	if err := x.S.BodyWait(tid); err != nil {
		return x.schedErr(err)
	}
	x.fx.bodyWait(tid, d, "body")
	return nil
}
