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
	// pre is the run's first execution, started as the run was created
	// (prestart.go), for the drive's first execution; nil: none.
	pre *prestart
}

func newRunState(run store.Run, opts DriveOptions) *runState {
	return wrapRunState(exec.NewRunState(run), opts)
}

// wrapRunState is the run state of a drive with options opts around x.
func wrapRunState(x *exec.RunState, opts DriveOptions) *runState {
	rs := &runState{RunState: x, opts: opts}
	rs.ChildDrive = exec.ChildDrive{WaitTimers: opts.WaitTimers, Owner: opts.Owner, LeaseTTL: opts.LeaseTTL}
	if opts.hold != nil {
		rs.Lease = &opts.hold.lease
		rs.ByWork = opts.hold.byWork
	}
	return rs
}
