package host

import (
	"context"

	"github.com/skeinrun/skein/host/internal/checklink"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/modules"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// A host made by the checker (host/check) finds a checklink.Link in the
// context given to New: it takes its test hooks from the link and fills
// in what the checker needs of its internals (host/internal/checklink).

// linkHooks is hooks with the test hooks of the link l (nil: none).
func linkHooks(l *checklink.Link, hooks testHooks) testHooks {
	if l != nil {
		hooks.minting, hooks.replayInline = l.Minting, l.ReplayInline
	}
	return hooks
}

// fillLink fills in the link l (nil: none) with h's internals.
func (h *Host) fillLink(l *checklink.Link) {
	if l == nil {
		return
	}
	l.Sim = h.sim
	l.NewRun = h.newRun
	l.Compiled, l.Release = h.modules.Compiled, h.modules.Release
	l.Upgrade = h.runUpgrade
}

// runUpgrade runs one execution of run in the upgrade world w from its
// journal recorded, with cm, and returns it ended (checklink.Link.Upgrade).
func (h *Host) runUpgrade(ctx context.Context, cm *modules.Module, run store.Run, recorded []sched.Record, w *exec.UpgradeWorld) *exec.Exec {
	rs := newRunState(run, DriveOptions{})
	defer rs.Close()
	rs.World = w
	x := exec.NewExec(h.execHost(), rs.RunState, recorded)
	h.runExec(ctx, "upgrade check", cm, x) // how the execution ended is in x.State and x.Failure
	return x
}
