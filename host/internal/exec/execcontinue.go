package exec

import (
	"bytes"
	"context"
	"fmt"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/sched"
)

// continueAsNew is the host function continue_as_new(task, ptr, len): the
// run ends as continued, its successor starting with the input given.
func (x *Exec) continueAsNew(ctx context.Context, stack []uint64) error {
	tid := sched.TaskID(u32(stack, 0))
	if tid == 0 || tid != x.S.Current() {
		return x.fail("continue_as_new: task %d is not the running task", tid)
	}
	if x.S.CurrentInBody() {
		return x.fail("continue_as_new inside a step body: a step body cannot end the run")
	}
	data, err := x.read(u32(stack, 1), u32(stack, 2))
	if err != nil {
		return err
	}
	what := func() string { return "the input of the continued run" }
	if err := x.checkPayload(len(data), what); err != nil {
		return err
	}
	if err := x.checkValue(what, data); err != nil {
		return err
	}
	if p := x.rs.Run.Parent; p != "" {
		return x.fail("continue_as_new in child run %s: a child run cannot continue as new (its parent %s awaits its end); continue the top-level run instead", x.rs.Run.ID, p)
	}
	if len(data) == 0 {
		data = []byte("null")
	}
	x.Continued = bytes.Clone(data)
	return x.stop(Done, nil)
}

// countJournal counts a durable op against Config.MaxJournalOps: a run
// whose journal passes it without continuing as new fails.
func (x *Exec) countJournal(kind abi.OpKind) error {
	switch kind {
	case abi.OpStep, abi.OpCall, abi.OpSleep, abi.OpPromise, abi.OpChild, abi.OpAttrs:
	default:
		return nil
	}
	x.journalOps++
	if lim := x.h.Config().MaxJournalOps; x.journalOps > lim {
		return x.stop(Failed, x.h.Config().limitError(
			fmt.Sprintf("the run's journal passed %d durable ops without continuing as new; a workflow that loops for long should call skein.ContinueAsNew every so many iterations, carrying its state in the input", lim),
			"MaxJournalOps", fmt.Sprint(lim)))
	}
	return nil
}
