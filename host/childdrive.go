package host

import (
	"context"
	"errors"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/store"
)

// driveChild has the child run id of rs's run driven on base (without
// the parent execution's watchdog), unless it is being driven for the
// run already.
func (h *Host) driveChild(base context.Context, rs *exec.RunState, id string) {
	if rs.ByWork {
		// A worker (Work) drives the parent: the child is a run like any
		// other, claimed with a lease of its own by whichever worker is
		// free, and its end settles the parent's op.
		h.signal()
		return
	}
	if !rs.SetChildLive(id, true) {
		return
	}
	// Drive takes the child's lease, as it took the parent's.
	opts := DriveOptions{WaitTimers: rs.ChildDrive.WaitTimers, Owner: rs.ChildDrive.Owner, LeaseTTL: rs.ChildDrive.LeaseTTL}
	// Not ended by this execution's watchdog; ended by Host.Close, and
	// by the end of the parent's drive unless the run ended: the end of
	// the parent cancels its children or abandons them, to go on.
	cctx, cancel := context.WithCancel(context.WithoutCancel(base))
	stop := context.AfterFunc(base, func() {
		if !rs.Ended.Load() {
			cancel()
		}
	})
	ctx, done, ok := h.childDriveContext(cctx)
	if !ok {
		stop()
		cancel()
		rs.SetChildLive(id, false)
		return
	}
	go func() {
		defer cancel()
		defer stop()
		defer done()
		for range 3 {
			r, err := h.Drive(ctx, id, opts)
			switch {
			case errors.Is(err, context.Canceled):
				// Host.Close (skein run exits): the child stays running,
				// to go on by replay under a worker; an abandoned child,
				// whose parent ended, is left so on purpose.
				h.log.Info("child run interrupted: it stays running", "run", rs.Run.ID, "child", id, "err", err)
			case err != nil && !errors.Is(err, errActive):
				h.log.Warn("child run stopped", "run", rs.Run.ID, "child", id, "err", err)
			}
			// A cancellation stored just as the child suspended (too
			// late for its drive to see) is delivered by driving it again.
			if err != nil || r.Status != store.RunSuspended || !h.cancelWaits(ctx, id) {
				break
			}
		}
		rs.SetChildLive(id, false)
		rs.MB.Nudge()
	}()
}
