package host

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// compileWorkers is how many goroutines wazero compiles an uploaded
// module on (a compilation with a deadline: Deploy). With one, wazero's
// compiler never looks at its context; with two or more it checks it
// before each function, so a compilation past its deadline, or whose
// request went away, stops after the functions in progress (each bounded
// by ModuleLimits: about 2 s at worst, see docs/limits.md). A module a
// run needs (no deadline: it was checked when it was deployed) compiles
// on one goroutine: measured with three workers on one Postgres, two
// compile goroutines per module starved the workers' lease renewals on
// 2 cores (a lease was lost in every run of TestClusterPostgres).
const compileWorkers = 2

// compileCode compiles code with wazero under a compile slot
// (Config.MaxConcurrentCompiles). It returns when the compilation ends,
// when ctx ends, or when timeout (if positive) passes, whichever is
// first. In the last two cases the compilation is told to stop and goes
// on in the background until it does, holding its slot, so that no more
// compilations run at once than the limit allows, and its result is
// closed.
//
// Errors: a *ModuleError for a module wazero refuses or one past the
// deadline (wrapping the CompileTimeout *LimitError), ctx's cause when
// the caller went away.
func (h *Host) compileCode(ctx context.Context, label string, code []byte, timeout time.Duration) (wazero.CompiledModule, error) {
	if ctx.Err() != nil {
		// Ended before the compilation began (the structure check took
		// that long): one error, not whichever case the select below
		// would pick at random with a free slot.
		return nil, compileStopped(ctx, label)
	}
	h.modules.waiting.Add(1)
	select {
	case h.compileSlots <- struct{}{}:
		h.modules.waiting.Add(-1)
		h.modules.running.Add(1)
	case <-ctx.Done():
		h.modules.waiting.Add(-1)
		return nil, fmt.Errorf("waiting for a compile slot (Config.MaxConcurrentCompiles = %d; --max-concurrent-compiles): %w", h.cfg.MaxConcurrentCompiles, context.Cause(ctx))
	}
	cctx, cancel := context.WithCancelCause(ctx)
	if timeout > 0 {
		var stop context.CancelFunc
		cctx, stop = context.WithTimeoutCause(cctx, timeout, &LimitError{
			What:  fmt.Sprintf("compiling the module took longer than %s", timeout),
			Limit: "CompileTimeout", Flag: "--compile-timeout", Value: timeout.String()})
		defer stop()
	}
	done := make(chan compileResult, 1)
	h.compiles.Add(1)
	go func() {
		defer h.compiles.Done()
		defer func() {
			h.modules.running.Add(-1)
			<-h.compileSlots
		}()
		wctx := cctx
		if timeout > 0 {
			wctx = experimental.WithCompilationWorkers(cctx, compileWorkers)
		}
		done <- h.compileRecover(wctx, code)
	}()
	select {
	case r := <-done:
		stopped := cctx.Err() != nil
		cancel(nil)
		switch {
		case r.err != nil && stopped:
			return nil, compileStopped(cctx, label)
		case r.err != nil:
			return nil, &ModuleError{Module: label, Reason: "invalid WebAssembly: " + r.err.Error(), Err: r.err}
		}
		return r.cm, nil
	case <-cctx.Done():
		err := compileStopped(cctx, label)
		cancel(nil)
		h.compiles.Add(1)
		go func() { // collect the late result
			defer h.compiles.Done()
			if r := <-done; r.cm != nil {
				r.cm.Close(context.Background())
			}
		}()
		return nil, err
	}
}

type compileResult struct {
	cm  wazero.CompiledModule
	err error
}

// compileRecover runs wazero's compiler, turning a panic in it (a module
// that trips a wazero bug) into an error: it runs on its own goroutine,
// where a panic would end the process.
func (h *Host) compileRecover(ctx context.Context, code []byte) (r compileResult) {
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("wazero panicked compiling a module", "panic", p, "stack", string(debug.Stack()))
			r = compileResult{err: fmt.Errorf("the compiler failed on it: %v", p)}
		}
	}()
	cm, err := h.rt.CompileModule(ctx, code)
	return compileResult{cm, err}
}

// compileStopped is the error of a compilation stopped by its context: a
// *ModuleError wrapping the CompileTimeout *LimitError, or the reason
// the caller went away.
func compileStopped(cctx context.Context, label string) error {
	cause := context.Cause(cctx)
	if le, ok := cause.(*LimitError); ok {
		return &ModuleError{Module: label, Reason: le.Error(), Err: le}
	}
	return fmt.Errorf("compiling module %s stopped: %w", label, cause)
}
