package host

import (
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/store"
)

// runState is the state of one drive of a run: the execution's
// (exec.RunState: mailbox, timers, activities, the batch to commit) and
// the drive's options, which only the driver reads.
type runState struct {
	*exec.RunState
	opts DriveOptions
}

func newRunState(run store.Run, opts DriveOptions) *runState {
	rs := &runState{RunState: exec.NewRunState(run), opts: opts}
	rs.ChildDrive = exec.ChildDrive{WaitTimers: opts.WaitTimers, Owner: opts.Owner, LeaseTTL: opts.LeaseTTL}
	if opts.hold != nil {
		rs.Lease = &opts.hold.lease
		rs.ByWork = opts.hold.byWork
	}
	return rs
}
