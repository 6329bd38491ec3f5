package skein

import (
	"encoding/json"
	"fmt"
)

// ContinueAsNew ends the run with status "continued" and starts its
// successor: a new run of the same module and workflow whose input is
// input (JSON-encoded), with an empty journal. The run's end and the
// successor's creation are one store commit. The successor's id is the
// run's id with "~2" appended, or with its "~N" suffix counted up
// ("order-7" continues as "order-7~2", which continues as "order-7~3").
//
// A workflow that loops forever (a subscription, a poller) calls it every
// so many iterations, carrying its state in input, so that its journal
// and the cost of replaying it stay bounded (Config.MaxJournalOps).
//
// On success ContinueAsNew does not return: the host ends the module
// inside the call, and the tasks still running are dropped with it. It
// returns an error only when input does not encode as JSON, so a workflow
// may end with
//
//	return State{}, skein.ContinueAsNew(ctx, next)
//
// A child run cannot continue as new (its parent awaits its own end): the
// call fails the child run. After the run's cancellation was delivered,
// the run ends canceled instead and no successor starts.
func ContinueAsNew(ctx *Context, input any) error {
	ctx.check()
	b, err := json.Marshal(input)
	if err != nil {
		return fmt.Errorf("skein: ContinueAsNew: the input does not encode as JSON: %w", err)
	}
	flushFeed()
	hostContinue(ctx.t.id, ptr(b), uint32(len(b)))
	panic("skein: the host returned from continue_as_new")
}
