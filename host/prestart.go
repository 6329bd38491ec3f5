package host

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/modules"
	"github.com/skeinrun/skein/store"
)

// A run started to be driven at once (StartOptions.ClaimForDrive) has its
// first execution started while the commit that creates it is in flight:
// the guest runs from a reused instance to its first host call after the
// invocation and parks there (exec.Gate). If the run is created, the
// Drive that takes its lease (takePreclaimed) takes the parked execution
// too and opens the gate; otherwise (the commit failed, the run existed,
// the lease was not taken) the execution is dropped: stopped at the gate,
// its goroutine waited for, nothing of it recorded, committed or
// published (RATIONALE.md, "The first execution starts while the run's
// creation commits").

// errDropped is the cause with which a prestarted execution nobody drives
// is stopped.
var errDropped = errors.New("the run's creation did not commit, or no drive took the run")

// prestart is a first execution started before its run's creation
// committed, parked at its gate.
type prestart struct {
	h      *Host
	rs     *exec.RunState
	x      *exec.Exec
	gate   *exec.Gate
	cm     *modules.Module // acquired for the execution: released by the drive or by drop
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the execution ended

	mu    sync.Mutex
	taken bool // by a drive (take) or by drop: exactly one of them runs
}

// prestart starts the first execution of run r, about to be created
// leased to this host, from its compiled module if the host has it
// cached; nil when it does not (the drive starts the execution then).
// The execution runs on a goroutine of its own, owned by the host (Close
// drops it), under a context of its own: ctx's values without its end.
func (h *Host) prestart(ctx context.Context, r store.Run) *prestart {
	if h.sim != nil || h.xcfg.GuestOutputFor != nil || !h.modules.Cached(r.ModuleHash) {
		return nil
	}
	cm, err := h.modules.Compiled(ctx, r.ModuleHash)
	if err != nil {
		return nil
	}
	rs := exec.NewRunState(r)
	rs.Activating = time.Now() // activation latency (metrics.go)
	p := &prestart{h: h, rs: rs, cm: cm, gate: exec.NewGate(), done: make(chan struct{})}
	p.x = exec.NewExec(h.execHost(), rs, nil)
	p.x.SetGate(p.gate)
	pctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	p.cancel = cancel
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		cancel(nil)
		h.modules.Release(cm)
		return nil
	}
	h.owned.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.owned.Done()
		defer close(p.done)
		h.runExec(pctx, "drive", cm, p.x)
		p.gate.Park() // an execution that ended before its gate
	}()
	return p
}

// take hands the prestarted execution to the drive that calls it, once
// the guest is parked; false if it was dropped already.
func (p *prestart) take() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	ok := !p.taken
	p.taken = true
	p.mu.Unlock()
	if ok {
		<-p.gate.Parked()
	}
	return ok
}

// drop stops the prestarted execution at its gate and waits for its
// goroutine, unless a drive took it. It may be called more than once.
func (p *prestart) drop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	ok := !p.taken
	p.taken = true
	p.mu.Unlock()
	if ok {
		p.discard()
	}
}

// discard stops the execution at its gate, waits for its goroutine and
// releases its module: drop's, or a drive's that took it and then did not
// run it.
func (p *prestart) discard() {
	p.cancel(errDropped)
	<-p.done
	p.rs.Close()
	if p.cm != nil {
		p.h.modules.Release(p.cm)
		p.cm = nil
	}
}

// run opens the gate of the prestarted execution a drive took and waits
// for its end; ctx's end (the drive's) stops it as it would stop an
// execution the drive started.
func (p *prestart) run(ctx context.Context) *exec.Exec {
	stop := context.AfterFunc(ctx, func() { p.cancel(context.Cause(ctx)) })
	p.gate.Open()
	<-p.done
	stop()
	p.cancel(nil)
	return p.x
}

// module hands the prestarted execution's module to the drive that runs
// it, if it is the run's (hash): the drive releases it. Nil: none.
func (p *prestart) module(hash string) *modules.Module {
	if p == nil || p.cm == nil || p.cm.Hash() != hash {
		return nil
	}
	cm := p.cm
	p.cm = nil
	return cm
}
