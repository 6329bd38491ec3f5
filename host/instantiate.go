package host

import (
	"context"

	"github.com/skeinrun/skein/host/internal/modules"
)

// runExec runs one execution of a run (a drive's, a replay's or the
// upgrade check's) to its end; x.state and x.failure say how it ended.
// An error with which the engine ended a running execution (a trap, an
// exit, a failed instantiation) is already x.failure, and fails the run
// or the replay with it. An error that comes once the host had ended the
// execution (done, suspended, evicted: x.failure is nil) is the engine's
// failing to tear the instance down, after the run's outcome was made:
// it changes nothing of the run, and is logged with the run and its
// module, as what for names the execution (drive, replay, upgrade check).
func (h *Host) runExec(ctx context.Context, what string, cm *modules.Module, x *exec) {
	err := h.instantiate(ctx, cm, x)
	if err != nil && x.failure == nil {
		h.log.Warn("the engine failed after the execution ended", "execution", what,
			"run", x.rs.run.ID, "module", x.rs.run.ModuleHash, "err", err)
	}
}
