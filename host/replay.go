package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// IsDivergence reports whether err is a CodeMismatchError or a
// NondeterminismError.
func IsDivergence(err error) bool {
	var cm *CodeMismatchError
	var nd *NondeterminismError
	return errors.As(err, &cm) || errors.As(err, &nd)
}

// ReplayResult is what a verifying replay reached.
type ReplayResult struct {
	// Status is completed or failed when the root task finished, suspended
	// when the journal ended first (the run was not finished).
	Status store.RunStatus
	Result []byte // JSON, when completed
	Error  string // when failed
}

// Replay re-executes a stored run from the top against its journal,
// records nothing and runs no step body: every op must be settled by the
// journal. It returns what the run reached, or a CodeMismatchError or
// NondeterminismError at the first divergence. Use it to prove that a
// finished run replays exactly.
func (h *Host) Replay(ctx context.Context, runID string) (ReplayResult, error) {
	st := h.cfg.Store
	run, err := st.Run(ctx, runID)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: %w", runID, err)
	}
	cm, err := h.modules.Compiled(ctx, run.ModuleHash)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: %w", runID, err)
	}
	defer h.modules.Release(cm)
	outs, err := h.outcomesOf(ctx, run)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: %w", runID, err)
	}
	recs := make([]sched.Record, len(outs))
	for i, o := range outs {
		recs[i] = exec.FromStore(o)
	}
	rs := newRunState(run, DriveOptions{})
	defer rs.Close()
	rs.World = exec.VerifyWorld{}
	x := exec.NewExec(h.execHost(), rs.RunState, recs)
	h.runExec(ctx, "replay", cm, x)
	switch x.State {
	case exec.Done:
		if x.Continued != nil {
			return ReplayResult{Status: store.RunContinued, Result: x.Continued}, nil
		}
		if x.Result.OK {
			return ReplayResult{Status: store.RunCompleted, Result: x.Result.Value}, nil
		}
		return ReplayResult{Status: store.RunFailed, Error: x.Result.Err}, nil
	case exec.Suspended:
		return ReplayResult{Status: store.RunSuspended}, nil
	case exec.Diverged:
		return ReplayResult{}, x.Failure
	}
	return ReplayResult{Status: store.RunFailed, Error: x.Failure.Error()}, nil
}

// outcomesOf returns the journal of run, as read from the store: that of a
// final run through the journal cache, which keeps it (journalcache.go).
func (h *Host) outcomesOf(ctx context.Context, run store.Run) ([]store.Outcome, error) {
	if h.journals != nil && run.Status.Final() {
		return h.journals.FinalOutcomes(ctx, run.ID)
	}
	return h.cfg.Store.Outcomes(ctx, run.ID)
}
