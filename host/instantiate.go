package host

import (
	"context"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/modules"
)

// runExec runs one execution of a run (a drive's, a replay's or the
// upgrade check's) to its end; x.State and x.Failure say how it ended.
// An error with which the engine ended a running execution (a trap, an
// exit, a failed instantiation) is already x.Failure, and fails the run
// or the replay with it. An error that comes once the host had ended the
// execution (done, suspended, evicted: x.Failure is nil) is the engine's
// failing to tear the instance down, after the run's outcome was made:
// it changes nothing of the run, and is logged with the run and its
// module, as what for names the execution (drive, replay, upgrade check).
func (h *Host) runExec(ctx context.Context, what string, cm *modules.Module, x *exec.Exec) {
	err := x.Instantiate(ctx, cm)
	h.metrics.Of(x.Run().ID).Ran(x.Ran) // the namespace's CPU time (metrics.go)
	if err != nil && x.Failure == nil {
		h.log.Warn("the engine failed after the execution ended", "execution", what,
			"run", x.Run().ID, "module", x.Run().ModuleHash, "err", err)
	}
}
