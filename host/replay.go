package host

import (
	"context"
	"errors"
	"fmt"

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
		recs[i] = fromStore(o)
	}
	rs := newRunState(run, DriveOptions{})
	defer rs.close()
	rs.world = verifyWorld{}
	x := newExec(h, rs, recs)
	h.runExec(ctx, "replay", cm, x)
	switch x.state {
	case stDone:
		if x.continued != nil {
			return ReplayResult{Status: store.RunContinued, Result: x.continued}, nil
		}
		if x.result.OK {
			return ReplayResult{Status: store.RunCompleted, Result: x.result.Value}, nil
		}
		return ReplayResult{Status: store.RunFailed, Error: x.result.Err}, nil
	case stSuspended:
		return ReplayResult{Status: store.RunSuspended}, nil
	case stDiverged:
		return ReplayResult{}, x.failure
	}
	return ReplayResult{Status: store.RunFailed, Error: x.failure.Error()}, nil
}

// outcomesOf returns the journal of run, as read from the store: that of a
// final run through the journal cache, which keeps it (journalcache.go).
func (h *Host) outcomesOf(ctx context.Context, run store.Run) ([]store.Outcome, error) {
	if h.journals != nil && run.Status.Final() {
		return h.journals.FinalOutcomes(ctx, run.ID)
	}
	return h.cfg.Store.Outcomes(ctx, run.ID)
}
