package exec

import (
	"context"
	"fmt"

	"github.com/skeinrun/skein/abi"
)

// Gate holds an execution started before its run's creation committed
// (host/prestart.go): the guest runs up to its first host call after the
// invocation, parks there, and goes on only once the gate opens. Nothing
// the execution does before that call records, commits or publishes
// anything, so an execution whose run was never created can be dropped
// without a trace.
type Gate struct {
	parked chan struct{} // closed when the guest parks at the gate (or the execution ends)
	open   chan struct{} // closed to let the guest on
	done   bool          // the guest passed (or parked): only the guest's goroutine reads it
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{parked: make(chan struct{}), open: make(chan struct{})}
}

// Parked is closed once the guest waits at the gate, or the execution
// ended before it reached it (Park): from then on the guest touches no
// state of the run until Open.
func (g *Gate) Parked() <-chan struct{} { return g.parked }

// Park marks the guest parked without it having reached the gate (its
// execution ended): the goroutine that ran it calls it after the run.
func (g *Gate) Park() {
	if !g.done {
		g.done = true
		close(g.parked)
	}
}

// Open lets the guest pass the gate. It must be called once, after
// Parked is closed.
func (g *Gate) Open() { close(g.open) }

// SetGate makes the execution park at g (before Instantiate).
func (x *Exec) SetGate(g *Gate) { x.gate = g }

// gated reports whether host function name waits at the gate: every one
// but the calls with which the guest learns what to run, which touch
// nothing but the execution.
func gated(name string) bool {
	switch name {
	case abi.FnHello, abi.FnWorkflows, abi.FnInputSchema, abi.FnInvocation:
		return false
	}
	return true
}

// passGate parks the guest at its gate until the gate opens, or ctx ends
// (the execution was dropped, or its drive stopped): then the execution
// ends as interrupted.
func (x *Exec) passGate(ctx context.Context) error {
	g := x.gate
	x.gate = nil
	g.done = true
	close(g.parked)
	var err error
	x.blocking(func() {
		select {
		case <-g.open:
		case <-ctx.Done():
			err = fmt.Errorf("the execution was stopped before its run's creation committed: %w", context.Cause(ctx))
		}
	})
	return err
}
