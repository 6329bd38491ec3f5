package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/sched"
	"github.com/skeinrun/skein/store"
)

// DriveOptions tune Drive.
type DriveOptions struct {
	// WaitTimers: when the run suspends on a timer, wait for it in this
	// call and resume the run, instead of returning the suspended run.
	WaitTimers bool
	// OnExecution, if set, is called before each instantiation of the run:
	// the first, and one per replay after an eviction or a suspension.
	OnExecution func()
}

// Drive executes a run until it completes, fails, diverges or suspends,
// replaying its recorded history first. A run that is already terminal is
// returned as it is. Drive must not be called for the same run from two
// places at once.
func (h *Host) Drive(ctx context.Context, runID string, o DriveOptions) (store.Run, error) {
	st := h.cfg.Store
	run, err := st.Run(ctx, runID)
	if err != nil {
		return store.Run{}, fmt.Errorf("drive %s: %w", runID, err)
	}
	if run.Status.Terminal() {
		return run, nil
	}
	m, err := st.Module(ctx, run.ModuleHash)
	if err != nil {
		return run, fmt.Errorf("drive %s: module %s: %w", runID, shortHash(run.ModuleHash), err)
	}
	cm, _, err := h.compile(ctx, m.Name, m.Bytes)
	if err != nil {
		return run, fmt.Errorf("drive %s: %w", runID, err)
	}
	rs := newRunState(run)
	defer func() { rs.close() }() // rs is replaced after a suspension
	rs.run.Status, rs.run.WakeAt, rs.run.Error = store.RunRunning, 0, ""
	if err := h.commitRun(ctx, rs); err != nil {
		return run, err
	}
	for {
		outs, err := st.Outcomes(ctx, runID)
		if err != nil {
			return rs.run, fmt.Errorf("drive %s: load outcomes: %w", runID, err)
		}
		recs := make([]sched.Record, len(outs))
		for i, o := range outs {
			recs[i] = fromStore(o)
		}
		rs.mb.restale()
		if h.cfg.onExec != nil {
			h.cfg.onExec(runID)
		}
		if o.OnExecution != nil {
			o.OnExecution()
		}
		x := newExec(h, rs, recs)
		h.instantiate(ctx, cm, x)
		switch x.state {
		case stEvicted:
			continue
		case stSuspended:
			rs.run.Status = store.RunSuspended
			markOrphans(rs, outs, x.s)
			if err := h.commitRun(ctx, rs); err != nil {
				return rs.run, err
			}
			rs.close()
			if !o.WaitTimers || rs.run.WakeAt == 0 {
				return rs.run, nil
			}
			t := time.NewTimer(time.Until(time.Unix(0, rs.run.WakeAt)))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return rs.run, ctx.Err()
			}
			rs = newRunState(rs.run)
			rs.run.Status, rs.run.WakeAt = store.RunRunning, 0
			if err := h.commitRun(ctx, rs); err != nil {
				return rs.run, err
			}
			continue
		case stDone:
			if x.result.OK {
				rs.run.Status, rs.run.Result = store.RunCompleted, x.result.Value
			} else {
				rs.run.Status, rs.run.Error = store.RunFailed, x.result.Err
			}
		case stDiverged:
			rs.batch.Outcomes = nil // nothing a diverging replay made is kept
			rs.run.Status, rs.run.Error = store.RunDiverged, x.failure.Error()
		default:
			if ctx.Err() != nil {
				// Interrupted (shutdown): what was recorded stays; the run
				// resumes by replay later.
				return rs.run, fmt.Errorf("drive %s: %w", runID, ctx.Err())
			}
			rs.run.Status, rs.run.Error = store.RunFailed, x.failure.Error()
		}
		rs.run.WakeAt = 0
		if x.state == stDone {
			markOrphans(rs, outs, x.s)
		}
		if err := h.commitRun(ctx, rs); err != nil {
			return rs.run, err
		}
		var runErr error
		if rs.run.Status == store.RunDiverged {
			runErr = x.failure
		}
		return rs.run, runErr
	}
}

// markOrphans queues updates of the orphaned flag of stored outcomes: set
// where the execution never reached the key, cleared where it did.
func markOrphans(rs *runState, outs []store.Outcome, s *sched.Sched) {
	for _, o := range outs {
		if reached := s.Issued(o.Key); reached == o.Orphaned {
			o.Orphaned = !reached
			rs.batch.Outcomes = append(rs.batch.Outcomes, store.RunOutcome{RunID: rs.run.ID, Outcome: o})
		}
	}
}

// Resume points a suspended, diverged or failed run at another module
// (a fixed or changed version of its code) and drives it: the run replays
// its history against the new code. Records are kept; a recorded key the
// new code reaches with a different function diverges the run again.
func (h *Host) Resume(ctx context.Context, runID, module string, o DriveOptions) (store.Run, error) {
	st := h.cfg.Store
	run, err := st.Run(ctx, runID)
	if err != nil {
		return store.Run{}, fmt.Errorf("resume %s: %w", runID, err)
	}
	if run.Status == store.RunCompleted || run.Status == store.RunCanceled {
		return run, fmt.Errorf("resume %s: the run is %s", runID, run.Status)
	}
	if module != "" {
		m, err := st.Module(ctx, module)
		if err != nil {
			return run, fmt.Errorf("resume %s: module %q: %w", runID, module, err)
		}
		found := false
		for _, w := range m.Workflows {
			found = found || w == run.Workflow
		}
		if !found {
			return run, fmt.Errorf("resume %s: module %s has no workflow %q", runID, shortHash(m.Hash), run.Workflow)
		}
		run.ModuleHash = m.Hash
	}
	run.Status, run.Error, run.Result, run.UpdatedAt = store.RunPending, "", nil, time.Now()
	if err := st.Commit(ctx, store.Batch{Runs: []store.Run{run}}); err != nil {
		return run, fmt.Errorf("resume %s: %w", runID, err)
	}
	return h.Drive(ctx, runID, o)
}

// commitRun commits queued records with the run's current status.
func (h *Host) commitRun(ctx context.Context, rs *runState) error {
	rs.run.UpdatedAt = time.Now()
	rs.batch.Runs = append(rs.batch.Runs, rs.run)
	if err := rs.flush(context.WithoutCancel(ctx), h.cfg.Store); err != nil {
		return fmt.Errorf("drive %s: %w", rs.run.ID, err)
	}
	return nil
}

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
	m, err := st.Module(ctx, run.ModuleHash)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: module: %w", runID, err)
	}
	cm, _, err := h.compile(ctx, m.Name, m.Bytes)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: %w", runID, err)
	}
	outs, err := st.Outcomes(ctx, runID)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: %w", runID, err)
	}
	recs := make([]sched.Record, len(outs))
	for i, o := range outs {
		recs[i] = fromStore(o)
	}
	rs := newRunState(run)
	defer rs.close()
	x := newExec(h, rs, recs)
	x.verify = true
	h.instantiate(ctx, cm, x)
	switch x.state {
	case stDone:
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
