package exec

import (
	"context"
	"fmt"
)

// checkPayload fails the run when a value from the guest is too large;
// what names the value (called only then: the check is on every op).
func (x *Exec) checkPayload(n int, what func() string) error {
	if n > x.h.Config().MaxPayloadBytes {
		return x.stop(Failed, x.h.PayloadError(what(), n))
	}
	return nil
}

// countOps counts an op of the execution against Config.MaxOps.
func (x *Exec) countOps() error {
	x.ops++
	if x.ops > x.h.Config().MaxOps {
		return x.stop(Failed, x.h.Config().limitError(fmt.Sprintf("the run issued more than %d ops", x.h.Config().MaxOps), "MaxOps", fmt.Sprint(x.h.Config().MaxOps)))
	}
	return nil
}

// taskStarted counts a new live task against Config.MaxTasks.
func (x *Exec) taskStarted() error {
	x.liveTasks++
	if x.liveTasks > x.h.Config().MaxTasks {
		return x.stop(Failed, x.h.Config().limitError(fmt.Sprintf("the run has more than %d live tasks", x.h.Config().MaxTasks), "MaxTasks", fmt.Sprint(x.h.Config().MaxTasks)))
	}
	return nil
}

// countChild counts a child op of the execution against
// Config.MaxChildren (replayed ones included: the run's total).
func (x *Exec) countChild() error {
	x.childOps++
	if x.childOps > x.h.Config().MaxChildren {
		return x.stop(Failed, x.h.Config().limitError(fmt.Sprintf("the run started more than %d child runs", x.h.Config().MaxChildren), "MaxChildren", fmt.Sprint(x.h.Config().MaxChildren)))
	}
	return nil
}

// checkChildDepth fails the run when the child run it starts would be
// deeper than Config.MaxChildDepth (a run started by a caller is depth 0).
func (x *Exec) checkChildDepth(ctx context.Context, key, workflow string) error {
	rs := x.rs
	if rs.depth < 0 {
		var d int
		var err error
		x.blocking(func() { d, err = x.h.RunDepth(ctx, rs.Run, x.h.Config().MaxChildDepth) })
		if err != nil {
			return x.fail("start child run at key %q: %v", key, err)
		}
		rs.depth = d
	}
	if rs.depth+1 > x.h.Config().MaxChildDepth {
		return x.stop(Failed, x.h.Config().limitError(fmt.Sprintf("child run %q at key %q would be %d levels deep", workflow, key, rs.depth+1), "MaxChildDepth", fmt.Sprint(x.h.Config().MaxChildDepth)))
	}
	return nil
}
