package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/host/internal/engine"
)

// compileWorkers is how many goroutines wazero compiles an uploaded
// module on (a compilation with a deadline: Deploy). With one, wazero's
// compiler never looks at its context; with two or more it checks it
// before each function, so a compilation past its deadline, or whose
// request went away, stops after the functions in progress (each bounded
// by ModuleLimits: about 2 s at worst, see docs/limits.md). A module a
// run needs (no deadline: it was checked when it was deployed) compiles
// on one goroutine, about 10% less CPU, leaving the other cores to the
// runs already executing.
const compileWorkers = 2

// compileCode compiles wasm with the engine under a compile slot
// (Config.MaxConcurrentCompiles), with o (its Workers set here) from the
// module's measured shape. It returns when the compilation ends,
// when ctx ends, or when timeout (if positive) passes, whichever is
// first. In the last two cases the compilation is told to stop and goes
// on in the background until it does, holding its slot, so that no more
// compilations run at once than the limit allows, and its result is
// closed.
//
// Errors: a *ModuleError for a module the engine refuses or one past
// the deadline (wrapping the CompileTimeout *LimitError), ctx's cause
// when the caller went away.
func (h *Host) compileCode(ctx context.Context, label string, wasm []byte, timeout time.Duration, o engine.CompileOptions) (engine.Module, error) {
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
		return nil, fmt.Errorf("waiting for a compile slot (Config.MaxConcurrentCompiles = %d%s): %w", h.cfg.MaxConcurrentCompiles, hintSuffix(h.cfg.limitHint("MaxConcurrentCompiles")), context.Cause(ctx))
	}
	cctx, cancel := context.WithCancelCause(ctx)
	o.Workers = 1
	if timeout > 0 {
		var stop context.CancelFunc
		cctx, stop = context.WithTimeoutCause(cctx, timeout, h.cfg.limitError(fmt.Sprintf("compiling the module took longer than %s", timeout), "CompileTimeout", timeout.String()))
		defer stop()
		o.Workers = compileWorkers
	}
	done := make(chan compileResult, 1)
	h.compiles.Add(1)
	go func() {
		defer h.compiles.Done()
		defer func() {
			h.modules.running.Add(-1)
			<-h.compileSlots
		}()
		m, err := h.eng.Compile(cctx, wasm, o)
		done <- compileResult{m, err}
	}()
	select {
	case r := <-done:
		stopped := cctx.Err() != nil
		cancel(nil)
		if r.err != nil && stopped {
			return nil, compileStopped(cctx, label)
		}
		return r.mod, h.compileError(label, r.err)
	case <-cctx.Done():
		err := compileStopped(cctx, label)
		cancel(nil)
		h.compiles.Add(1)
		go func() { // collect the late result
			defer h.compiles.Done()
			if r := <-done; r.mod != nil {
				r.mod.Close(context.Background())
			}
		}()
		return nil, err
	}
}

type compileResult struct {
	mod engine.Module
	err error
}

// compileError is the *ModuleError of a module the engine refused (nil
// for nil). A panic in the engine's compiler is logged with its stack.
func (h *Host) compileError(label string, err error) error {
	var inv *engine.InvalidError
	var imp *engine.ImportError
	var init *engine.InitTimeoutError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &init) && h.cfg.MaxRunWithoutYield <= 0:
		return &ModuleError{Module: label, Reason: init.Error(), Err: err}
	case errors.As(err, &init):
		// As the watchdog says it of a command's start-up (watchdog.go).
		le := h.cfg.limitError(fmt.Sprintf("workflow code ran %s without yielding to the host", init.Limit), "MaxRunWithoutYield", init.Limit.String())
		return &ModuleError{Module: label, Reason: le.Error(), Err: le}
	case errors.As(err, &inv):
		if inv.Stack != "" {
			h.log.Error("the engine panicked compiling a module", "module", label, "panic", inv.Err, "stack", inv.Stack)
		}
		return &ModuleError{Module: label, Reason: "invalid WebAssembly: " + inv.Error(), Err: err}
	case errors.As(err, &imp):
		return &ModuleError{Module: label, Reason: imp.Error()}
	}
	return fmt.Errorf("compiling module %s: %w", label, err)
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
