package modules

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/limit"
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
// the deadline (wrapping the CompileTimeout *limit.Error), ctx's cause
// when the caller went away.
func (s *Set) compileCode(ctx context.Context, label string, wasm []byte, timeout time.Duration, o engine.CompileOptions) (engine.Module, error) {
	if ctx.Err() != nil {
		// Ended before the compilation began (the structure check took
		// that long): one error, not whichever case the select below
		// would pick at random with a free slot.
		return nil, compileStopped(ctx, label)
	}
	s.cache.waiting.Add(1)
	select {
	case s.slots <- struct{}{}:
		s.cache.waiting.Add(-1)
		s.cache.running.Add(1)
	case <-ctx.Done():
		s.cache.waiting.Add(-1)
		return nil, fmt.Errorf("waiting for a compile slot (Config.MaxConcurrentCompiles = %d%s): %w", s.cfg.MaxConcurrentCompiles, limit.Suffix(s.cfg.Hints.Of("MaxConcurrentCompiles")), context.Cause(ctx))
	}
	cctx, cancel := context.WithCancelCause(ctx)
	o.Workers = 1
	if timeout > 0 {
		var stop context.CancelFunc
		cctx, stop = context.WithTimeoutCause(cctx, timeout, s.cfg.Hints.New(fmt.Sprintf("compiling the module took longer than %s", timeout), "CompileTimeout", timeout.String()))
		defer stop()
		o.Workers = compileWorkers
	}
	done := make(chan compileResult, 1)
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		defer func() {
			s.cache.running.Add(-1)
			<-s.slots
		}()
		m, err := s.cfg.Engine.Compile(cctx, wasm, o)
		done <- compileResult{m, err}
	}()
	select {
	case r := <-done:
		stopped := cctx.Err() != nil
		cancel(nil)
		if r.err != nil && stopped {
			return nil, compileStopped(cctx, label)
		}
		return r.mod, s.compileError(label, r.err)
	case <-cctx.Done():
		err := compileStopped(cctx, label)
		cancel(nil)
		s.runs.Add(1)
		go func() { // collect the late result
			defer s.runs.Done()
			if r := <-done; r.mod != nil {
				_ = r.mod.Close(context.Background()) // it frees memory: both engines' Close return nil
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
func (s *Set) compileError(label string, err error) error {
	var inv *engine.InvalidError
	var imp *engine.ImportError
	var init *engine.InitTimeoutError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &init) && s.cfg.MaxRunWithoutYield <= 0:
		return &Error{Module: label, Reason: init.Error(), Err: err}
	case errors.As(err, &init):
		// As the watchdog says it of a command's start-up (watchdog.go).
		le := s.cfg.Hints.New(fmt.Sprintf("workflow code ran %s without yielding to the host", init.Limit), "MaxRunWithoutYield", init.Limit.String())
		return &Error{Module: label, Reason: le.Error(), Err: le}
	case errors.As(err, &inv):
		if inv.Stack != "" {
			s.cfg.Log.Error("the engine panicked compiling a module", "module", label, "panic", inv.Err, "stack", inv.Stack)
		}
		return &Error{Module: label, Reason: "invalid WebAssembly: " + inv.Error(), Err: err}
	case errors.As(err, &imp):
		return &Error{Module: label, Reason: imp.Error()}
	}
	return fmt.Errorf("compiling module %s: %w", label, err)
}

// compileStopped is the error of a compilation stopped by its context: a
// *Error wrapping the CompileTimeout *limit.Error, or the reason
// the caller went away.
func compileStopped(cctx context.Context, label string) error {
	cause := context.Cause(cctx)
	if le, ok := cause.(*limit.Error); ok {
		return &Error{Module: label, Reason: le.Error(), Err: le}
	}
	return fmt.Errorf("compiling module %s stopped: %w", label, cause)
}

// Wait waits for the compilations running, those told to stop included
// (Host.Close).
func (s *Set) Wait() { s.runs.Wait() }
