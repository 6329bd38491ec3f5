package exec

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/engine"
)

// progressFns are the host functions that count as progress for the
// no-yield limit: the ones that hand control to the host's scheduler
// (next, body_sleep, task_done) or issue durable work, which MaxOps
// bounds (op, step_done). A call that returns at once without either
// (canceled, outcomes, real_now, real_rand, await of a settled future…)
// is not progress: a loop of such calls is as stuck as a loop of none.
var progressFns = map[string]bool{
	abi.FnNext:      true,
	abi.FnBodySleep: true,
	abi.FnTaskDone:  true,
	abi.FnOp:        true,
	abi.FnStepDone:  true,
}

// watchState is what an execution's watchdog reads, from its own goroutine.
type watchState struct {
	yields  atomic.Uint64 // progress calls made
	waiting atomic.Int32  // > 0 while the host blocks (idle wait, store)
	// cancelSeen: the execution has delivered the run's cancellation to
	// the workflow, which now handles it.
	cancelSeen atomic.Bool
	// waited is the time spent blocking, in ns, for the CPU limit.
	waited atomic.Int64
}

// hostCall runs one host function call of the guest.
func hostCall(ctx context.Context, x *Exec, mem engine.Memory, name string, progress bool, fn func(*Exec, context.Context, []uint64) error, stack []uint64) error {
	if progress {
		x.wd.yields.Add(1)
	}
	x.mem = mem
	if x.rs == nil && name != abi.FnHello && name != abi.FnWorkflows && name != abi.FnInputSchema && name != abi.FnInvocation {
		return x.fail("the module called %s before reading its invocation", name)
	}
	if x.fed.entries != nil && name != abi.FnFeed && name != abi.FnCanceled {
		return x.fail("the module called %s while task %d held a feed of %d recorded outcomes; it must first report with feed how many it used (abi/README.md, feed)", name, x.fed.task, len(x.fed.entries))
	}
	return fn(x, ctx, stack)
}

// blocking runs f, which may wait (for completions, for the store), as
// time that counts neither against the no-yield limit nor as CPU time.
func (x *Exec) blocking(f func()) {
	start := time.Now()
	x.wd.waiting.Add(1)
	defer func() {
		x.wd.waiting.Add(-1)
		x.wd.waited.Add(int64(time.Since(start)))
	}()
	f()
}

// hardCancel is the cause that stops an execution which did not take its
// cancellation within CancelGrace.
type hardCancel struct{ reason string }

func (e *hardCancel) Error() string {
	return fmt.Sprintf("%s (the run was stopped: it did not reach a point where the workflow could handle the cancellation within %s)", e.reason, CancelGrace)
}

// hardPause is the cause that stops an execution of a paused run which
// did not reach an idle point within CancelGrace.
type hardPause struct{}

func (*hardPause) Error() string {
	return fmt.Sprintf("the run was paused and stopped: it did not reach an idle point within %s", CancelGrace)
}

// watch starts the watchdog of an execution. Every tick it checks the
// limits of docs/limits.md that only time can tell: time without
// yielding (Config.MaxRunWithoutYield), the execution's wall time and CPU
// time (MaxExecutionTime, MaxExecutionCPU), and a cancellation that the
// execution has not taken within CancelGrace. It stops the execution by
// cancelling its context with the reason as the cause (wazero's
// close-on-context-done stops the guest). It returns a function that
// stops the watchdog.
func (x *Exec) watch(cancel context.CancelCauseFunc) (stop func()) {
	cfg := x.h.Config()
	tick := 250 * time.Millisecond
	if l := cfg.MaxRunWithoutYield; l > 0 {
		tick = min(tick, max(l/8, time.Millisecond))
	}
	start := time.Now()
	var stopped atomic.Bool
	var timer atomic.Pointer[time.Timer]
	last, quiet := x.wd.yields.Load(), start // read by one check at a time
	var check func()
	check = func() {
		if stopped.Load() {
			return
		}
		now := time.Now()
		if v := x.wd.yields.Load(); x.wd.waiting.Load() > 0 || v != last {
			last, quiet = v, now
		}
		if err := x.overLimit(now, start, quiet); err != nil {
			cancel(err)
			return
		}
		timer.Store(time.AfterFunc(tick, check))
	}
	timer.Store(time.AfterFunc(tick, check))
	return func() {
		stopped.Store(true)
		timer.Load().Stop()
	}
}

// overLimit returns the cause to stop the execution with, if any.
func (x *Exec) overLimit(now, start, quiet time.Time) error {
	cfg := x.h.Config()
	if l := cfg.MaxRunWithoutYield; l > 0 && now.Sub(quiet) >= l {
		return cfg.limitError(fmt.Sprintf("workflow code ran %s without yielding to the host", l), "MaxRunWithoutYield", l.String())
	}
	if l := cfg.MaxExecutionTime; l > 0 && now.Sub(start) > l {
		return cfg.limitError(fmt.Sprintf("the execution ran for more than %s", l), "MaxExecutionTime", l.String())
	}
	if l := cfg.MaxExecutionCPU; l > 0 && now.Sub(start)-time.Duration(x.wd.waited.Load()) > l && x.wd.waiting.Load() == 0 {
		return cfg.limitError(fmt.Sprintf("the execution ran workflow code for more than %s", l), "MaxExecutionCPU", l.String())
	}
	if x.rs != nil && x.fx.hardCancels() && !x.wd.cancelSeen.Load() && x.wd.waiting.Load() == 0 {
		if reason, since := x.rs.MB.pendingCancel(); !since.IsZero() && now.Sub(since) >= CancelGrace {
			return &hardCancel{reason: reason}
		}
	}
	if x.rs != nil && x.fx.hardCancels() && x.wd.waiting.Load() == 0 {
		if since := x.rs.MB.pausedSince(); !since.IsZero() && now.Sub(since) >= CancelGrace {
			return &hardPause{}
		}
	}
	return nil
}
