package host

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/skeinrun/skein/abi"
)

// Default resource limits (Config; docs/limits.md).
const (
	DefaultMemoryLimitPages   = 4096 // 256 MiB
	DefaultMaxRunWithoutYield = 5 * time.Second
	DefaultMaxPayloadBytes    = 4 << 20
	DefaultMaxOps             = 1_000_000
	DefaultMaxTasks           = 10_000
	DefaultMaxModuleBytes     = 64 << 20
)

func (c *Config) setLimitDefaults() {
	if c.MaxRunWithoutYield == 0 {
		c.MaxRunWithoutYield = DefaultMaxRunWithoutYield
	}
	if c.MaxPayloadBytes <= 0 {
		c.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if c.MaxOps <= 0 {
		c.MaxOps = DefaultMaxOps
	}
	if c.MaxTasks <= 0 {
		c.MaxTasks = DefaultMaxTasks
	}
	if c.MaxModuleBytes <= 0 {
		c.MaxModuleBytes = DefaultMaxModuleBytes
	}
}

// LimitError reports a run (or a module, or a request) that went over one
// of the host's resource limits. The run fails with it as its error; one
// run's limit never affects another run.
type LimitError struct {
	What  string // what went over the limit, e.g. "step value at key \"3\" is 5000000 bytes"
	Limit string // the Config field, e.g. "MaxPayloadBytes"
	Flag  string // the flag of `skein run` and `skein serve`, e.g. "--max-payload-bytes"
	Value string // the limit's value, e.g. "4194304 bytes (4 MiB)"
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s (limit Config.%s = %s; %s)", e.What, e.Limit, e.Value, e.Flag)
}

func bytesValue(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func (h *Host) payloadError(what string, n int) *LimitError {
	return &LimitError{What: fmt.Sprintf("%s is %d bytes", what, n), Limit: "MaxPayloadBytes",
		Flag: "--max-payload-bytes", Value: bytesValue(int64(h.cfg.MaxPayloadBytes))}
}

// checkPayload fails the run when a value from the guest is too large.
func (x *exec) checkPayload(ctx context.Context, what string, n int) {
	if n > x.h.cfg.MaxPayloadBytes {
		x.stop(ctx, stFailed, x.h.payloadError(what, n))
	}
}

// countOp counts an op of the execution against Config.MaxOps.
func (x *exec) countOp(ctx context.Context) {
	x.ops++
	if x.ops > x.h.cfg.MaxOps {
		x.stop(ctx, stFailed, &LimitError{What: fmt.Sprintf("the run issued more than %d ops", x.h.cfg.MaxOps),
			Limit: "MaxOps", Flag: "--max-ops", Value: fmt.Sprint(x.h.cfg.MaxOps)})
	}
}

// taskStarted counts a new live task against Config.MaxTasks.
func (x *exec) taskStarted(ctx context.Context) {
	x.liveTasks++
	if x.liveTasks > x.h.cfg.MaxTasks {
		x.stop(ctx, stFailed, &LimitError{What: fmt.Sprintf("the run has more than %d live tasks", x.h.cfg.MaxTasks),
			Limit: "MaxTasks", Flag: "--max-tasks", Value: fmt.Sprint(x.h.cfg.MaxTasks)})
	}
}

func (h *Host) moduleSizeError(label string, n int64) error {
	le := &LimitError{What: fmt.Sprintf("the module is %d bytes", n),
		Limit: "MaxModuleBytes", Flag: "--max-module-bytes", Value: bytesValue(int64(h.cfg.MaxModuleBytes))}
	return &ModuleError{Module: label, Reason: le.Error(), Err: le}
}

// memoryError names the memory limit when a guest died of running out of
// linear memory (a Go guest prints "out of memory" and exits with code 2).
func (h *Host) memoryError(failure error, stderr string) error {
	if !strings.Contains(stderr, "out of memory") {
		return failure
	}
	pages := int64(h.cfg.MemoryLimitPages)
	return fmt.Errorf("%w\n%v", &LimitError{What: "the module ran out of linear memory", Limit: "MemoryLimitPages",
		Flag: "--max-memory-mib", Value: fmt.Sprintf("%d pages (%d MiB)", pages, pages*64>>10)}, failure)
}

// hostFns are the ABI host functions by name (exec.go).
var hostFns = map[string]func(*exec, context.Context, []uint64){
	abi.FnHello:      (*exec).hello,
	abi.FnWorkflows:  (*exec).announce,
	abi.FnInvocation: (*exec).invocation,
	abi.FnTake:       (*exec).take,
	abi.FnNext:       (*exec).next,
	abi.FnOp:         (*exec).op,
	abi.FnStepDone:   (*exec).stepDone,
	abi.FnAwait:      (*exec).await,
	abi.FnSelect:     (*exec).selectFn,
	abi.FnTaskDone:   (*exec).taskDone,
	abi.FnBodySleep:  (*exec).bodySleep,
	abi.FnRealNow:    (*exec).realNow,
	abi.FnRealRand:   (*exec).realRand,
	abi.FnOutcomes:   (*exec).outcomes,
	abi.FnOpOptions:  (*exec).opOptions,
	abi.FnCanceled:   (*exec).canceledFn,
}

// hostCall runs one host function call of the guest. The progress counter
// is odd while the guest is inside the host, so the watchdog does not
// count time spent there (waiting for activities, timers, the store).
func hostCall(ctx context.Context, x *exec, mod api.Module, name string, fn func(*exec, context.Context, []uint64), stack []uint64) {
	x.progress.Add(1)
	defer x.progress.Add(1)
	x.mod = mod
	if x.rs == nil && name != abi.FnHello && name != abi.FnWorkflows && name != abi.FnInvocation {
		x.fail(ctx, "the module called %s before reading its invocation", name)
	}
	fn(x, ctx, stack)
}

// watch starts the watchdog of an execution: when the guest runs longer
// than Config.MaxRunWithoutYield without calling into the host, it
// cancels the execution's context with a LimitError as the cause, which
// stops the guest (wazero's close-on-context-done). It returns a function
// that stops the watchdog.
func (x *exec) watch(cancel context.CancelCauseFunc) (stop func()) {
	limit := x.h.cfg.MaxRunWithoutYield
	if limit <= 0 {
		return func() {}
	}
	tick := max(limit/8, time.Millisecond)
	var stopped atomic.Bool
	var timer atomic.Pointer[time.Timer]
	last, quiet := x.progress.Load(), time.Now() // read by one check at a time
	var check func()
	check = func() {
		if stopped.Load() {
			return
		}
		now := time.Now()
		if v := x.progress.Load(); v&1 == 1 || v != last {
			last, quiet = v, now
		} else if now.Sub(quiet) >= limit {
			cancel(&LimitError{What: fmt.Sprintf("workflow code ran %s without yielding to the host", limit),
				Limit: "MaxRunWithoutYield", Flag: "--max-run-without-yield", Value: limit.String()})
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
