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
	// LeaseWait is how long Drive waits for a run whose lease another
	// worker holds (Work, or a Drive in this process or another one
	// sharing the store) to be released or to expire, trying again every
	// 250ms; then it fails with a *store.LeaseHeldError naming the holder.
	// Zero: fail at once.
	LeaseWait time.Duration
	// OnLeaseWait, if set, is called once when Drive starts waiting for
	// the lease held as given.
	OnLeaseWait func(held store.Lease)
	// Owner names this process in the lease Drive takes; default
	// "{hostname}-{pid}-{random}", one per Host.
	Owner string
	// LeaseTTL is how long Drive's lease lasts unless renewed (it is
	// renewed every LeaseTTL/3 while the run executes, timers waited for
	// included); default DefaultLeaseTTL. If this process dies, another
	// worker may take the run over this long after the last renewal.
	LeaseTTL time.Duration

	hold   *leaseHold // the lease the drive holds; set by driveHeld
	resume *resumeTo  // Resume: the run is resumed (onto another module)
}

// leaseHold is the lease a drive holds on its run.
type leaseHold struct {
	lease    store.Lease
	released bool // the run's last commit released it (Batch.Release)
	byWork   bool // claimed by Work, which also drives the run's children
}

// resumeTo is what Resume asks of a drive: the run, failed or diverged
// included, is executed again, on the module given (its own when empty).
type resumeTo struct{ module string }

// errActive is returned by Drive for a run this process drives already.
var errActive = errors.New("the run is being driven in this process already")

// Drive executes a run until it completes, fails, diverges or suspends,
// replaying its recorded history first. A run that is already terminal is
// returned as it is. A run this process drives already (from another
// call) is not driven twice: Drive returns an error for it at once.
//
// Drive executes the run only under a lease on it (Store.ClaimRun), as
// Work does: it renews the lease while the run executes, fences every
// write with it, and releases it when it returns, so no other worker (in
// this process or another sharing the store) executes the run meanwhile.
// A run whose lease another worker holds is not executed: Drive waits for
// it up to DriveOptions.LeaseWait, then fails with a *store.LeaseHeldError
// (matched by store.ErrLeaseHeld) naming the holder. Once it holds the
// lease Drive reads the run again: a run that ended meanwhile is returned
// as stored, nothing executed.
//
// Settlements and a cancellation stored for the run are delivered at its
// first idle point after the replay. A run that suspends while one is
// waiting is driven again at once. When ctx ends, the records made so far
// are committed and the run stays running, to be resumed later.
func (h *Host) Drive(ctx context.Context, runID string, o DriveOptions) (store.Run, error) {
	if o.hold != nil {
		rs, err := h.activate(runID, o)
		if err != nil {
			return store.Run{}, fmt.Errorf("drive %s: %w", runID, err)
		}
		defer h.deactivate(runID)
		return h.drive(ctx, rs)
	}
	if o.resume == nil {
		// An ended run is returned without a lease: nothing executes, and
		// what it recorded is final.
		if r, err := h.cfg.Store.Run(ctx, runID); err != nil {
			return store.Run{}, fmt.Errorf("drive %s: %w", runID, err)
		} else if r.Status.Terminal() {
			return r, nil
		}
	}
	if h.isActive(runID) {
		return store.Run{}, fmt.Errorf("drive %s: %w", runID, errActive)
	}
	return h.driveClaimed(ctx, runID, o)
}

// activate registers a run as driven by this process.
func (h *Host) activate(runID string, o DriveOptions) (*runState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.active[runID]; ok {
		return nil, errActive
	}
	rs := newRunState(store.Run{ID: runID}, o)
	h.active[runID] = rs
	return rs, nil
}

func (h *Host) deactivate(runID string) {
	h.mu.Lock()
	rs := h.active[runID]
	delete(h.active, runID)
	h.mu.Unlock()
	if rs != nil && rs.mb.len() > 0 {
		// A settlement or cancellation reached the run after it decided to
		// stop; it is in the store, and a worker picks it up now.
		h.signal()
	}
}

// deliver hands a completion to a run driven by this process and reports
// whether it was.
func (h *Host) deliver(runID string, c sched.Completion) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs, ok := h.active[runID]
	if ok {
		rs.mb.put(c)
	}
	return ok
}

func (h *Host) drive(ctx context.Context, rs *runState) (store.Run, error) {
	st := h.cfg.Store
	runID := rs.run.ID
	rs.activating = time.Now() // activation latency (metrics.go)
	run, err := st.Run(ctx, runID)
	if err != nil {
		return store.Run{}, fmt.Errorf("drive %s: %w", runID, err)
	}
	switch to := rs.opts.resume; {
	case to != nil && run.Status.Final():
		return run, fmt.Errorf("resume %s: the run is %s: %w", runID, run.Status, ErrTerminal)
	case to != nil:
		if to.module != "" {
			run.ModuleHash = to.module
		}
		run.Result = nil
	case run.Status.Terminal():
		return run, nil // it ended before this drive took the lease
	}
	cm, err := h.compiledModule(ctx, run.ModuleHash)
	if err != nil {
		return run, fmt.Errorf("drive %s: %w", runID, err)
	}
	defer h.release(cm)
	defer func() { rs.close() }() // rs is replaced after a suspension
	rs.run = run
	if h.sim != nil {
		rs.sim = h.sim.run(runID, run.StartTime)
	}
	rs.run.Status, rs.run.WakeAt, rs.run.Error = store.RunRunning, 0, ""
	if err := h.commitRun(ctx, rs); err != nil {
		return run, err
	}
	for {
		if rs.activating.IsZero() {
			rs.activating = time.Now()
		}
		outs, err := st.Outcomes(ctx, runID)
		if err != nil {
			return rs.run, fmt.Errorf("drive %s: load outcomes: %w", runID, err)
		}
		if err := h.inbox(ctx, rs, outs); err != nil {
			return rs.run, err
		}
		recs := make([]sched.Record, len(outs))
		for i, o := range outs {
			recs[i] = fromStore(o)
		}
		rs.mb.restale()
		if h.cfg.onExec != nil {
			h.cfg.onExec(runID)
		}
		if rs.opts.OnExecution != nil {
			rs.opts.OnExecution()
		}
		h.emitStarted(rs.run, len(recs) > 0)
		h.metrics.execution(len(recs) > 0)
		h.log.Debug("execution started", "run", runID, "workflow", rs.run.Workflow, "replay", len(recs) > 0, "records", len(recs))
		x := newExec(h, rs, recs)
		h.instantiate(ctx, cm, x)
		switch x.state {
		case stEvicted:
			h.metrics.evictReplay.Add(1)
			continue
		case stSuspended:
			rs.run.Status = store.RunSuspended
			markOrphans(rs, outs, x.s)
			if err := h.commitRun(ctx, rs); err != nil {
				return rs.run, err
			}
			h.emitSuspended(rs.run)
			h.metrics.evictSuspend.Add(1)
			h.log.Debug("run suspended", "run", runID, "wake_at", rs.run.WakeAt)
			rs.close()
			again, err := h.waiting(ctx, rs)
			if err != nil {
				return rs.run, err
			}
			if !again {
				if !rs.opts.WaitTimers || rs.run.WakeAt == 0 {
					return rs.run, nil
				}
				t := time.NewTimer(time.Until(time.Unix(0, rs.run.WakeAt)))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return rs.run, ctx.Err()
				}
			}
			next := newRunState(rs.run, rs.opts)
			next.sim = rs.sim
			h.mu.Lock()
			h.active[runID] = next
			h.mu.Unlock()
			rs = next
			rs.run.Status, rs.run.WakeAt = store.RunRunning, 0
			if err := h.commitRun(ctx, rs); err != nil {
				return rs.run, err
			}
			continue
		case stDone:
			canceled, reason := x.s.Canceled()
			switch {
			case canceled:
				rs.run.Status, rs.run.Error = store.RunCanceled, sched.CanceledPrefix+reason
				if x.result.OK {
					rs.run.Result = x.result.Value
				}
			case x.result.OK:
				rs.run.Status, rs.run.Result = store.RunCompleted, x.result.Value
			default:
				rs.run.Status, rs.run.Error = store.RunFailed, x.result.Err
			}
		case stStopped:
			// The run did not take its cancellation in time (watchdog.go):
			// it ends canceled, its children are canceled too.
			rs.run.Status, rs.run.Error = store.RunCanceled, sched.CanceledPrefix+x.failure.Error()
			h.cancelChildren(ctx, rs, x.failure.Error())
		case stDiverged:
			rs.batch.Outcomes = nil // nothing a diverging replay made is kept
			rs.run.Status, rs.run.Error = store.RunDiverged, x.failure.Error()
		default:
			if ctx.Err() != nil {
				// Interrupted (shutdown): what was recorded is committed
				// and the run stays running, to resume by replay later.
				if err := h.commitRun(ctx, rs); err != nil {
					return rs.run, err
				}
				return rs.run, fmt.Errorf("drive %s: %w", runID, ctx.Err())
			}
			rs.run.Status, rs.run.Error = store.RunFailed, x.failure.Error()
		}
		rs.run.WakeAt = 0
		if x.state == stDone {
			markOrphans(rs, outs, x.s)
		}
		var toParent *sched.Completion
		if rs.run.Parent != "" && rs.run.Status.Terminal() && h.sim == nil {
			key, err := h.childKey(ctx, rs.run.Parent, runID)
			if err != nil {
				return rs.run, fmt.Errorf("drive %s: %w", runID, err)
			}
			out := childOutcome(rs.run)
			toParent = &sched.Completion{Key: key, Outcome: out}
			set := store.Settlement{RunID: rs.run.Parent, Key: key, Status: store.OutcomeOK, Value: out.Value}
			if !out.OK {
				set.Status, set.Value, set.Error = store.OutcomeError, nil, out.Err
			}
			rs.batch.Settlements = append(rs.batch.Settlements, set)
		}
		// Under a lease, the run's last commit releases it too.
		rs.batch.Release = rs.lease != nil
		if err := h.commitRun(ctx, rs); err != nil {
			return rs.run, err
		}
		if rs.opts.hold != nil {
			rs.opts.hold.released = true
		}
		h.runEnded(rs.run)
		h.metrics.runEnded(rs.run.Status)
		h.logEnded(rs.run)
		if toParent != nil && !h.deliver(rs.run.Parent, *toParent) {
			h.signal()
		}
		var runErr error
		if rs.run.Status == store.RunDiverged {
			runErr = x.failure
		}
		return rs.run, runErr
	}
}

// cancelChildren requests the cancellation of the child runs a run
// issued and has not been delivered.
func (h *Host) cancelChildren(ctx context.Context, rs *runState, reason string) {
	for key, id := range rs.children {
		_, err := h.Cancel(context.WithoutCancel(ctx), id, "parent run canceled: "+reason)
		if err != nil && !errors.Is(err, ErrTerminal) {
			h.log.Warn("cancel child run", "run", rs.run.ID, "key", key, "child", id, "err", err)
		}
	}
}

// inbox queues what the store holds for the run beyond its journal: the
// settlements not yet delivered, the cancellation, the run timeout.
func (h *Host) inbox(ctx context.Context, rs *runState, outs []store.Outcome) error {
	sets, err := h.cfg.Store.Settlements(ctx, rs.run.ID)
	if err != nil {
		return fmt.Errorf("drive %s: %w", rs.run.ID, err)
	}
	for _, s := range sets {
		rs.mb.put(settlementCompletion(s))
	}
	delivered := false
	for _, o := range outs {
		delivered = delivered || o.Key == store.CancelKey
	}
	if delivered {
		return nil
	}
	if rs.run.Cancel == "" && rs.run.Deadline > 0 && rs.sim != nil {
		rs.sim.at("deadline", rs.run.Deadline, sched.Completion{Key: sched.CancelKey, Outcome: sched.Outcome{Err: timeoutReason(rs.run)}})
		return nil
	}
	if rs.run.Cancel == "" && rs.run.Deadline > 0 {
		if d := time.Until(time.Unix(0, rs.run.Deadline)); d > 0 {
			id, reason := rs.run.ID, timeoutReason(rs.run)
			rs.deadline = time.AfterFunc(d, func() {
				if _, err := h.Cancel(context.Background(), id, reason); err != nil && !errors.Is(err, ErrTerminal) {
					h.log.Warn("run timeout: cancel", "run", id, "err", err)
				}
			})
			return nil
		}
		r, err := h.cfg.Store.RequestCancel(ctx, rs.run.ID, timeoutReason(rs.run))
		if err != nil {
			return fmt.Errorf("drive %s: run timeout: %w", rs.run.ID, err)
		}
		rs.run.Cancel = r.Cancel
	}
	if rs.run.Cancel != "" {
		rs.mb.put(sched.Completion{Key: sched.CancelKey, Outcome: sched.Outcome{Err: rs.run.Cancel}})
	}
	return nil
}

// settlementCompletion is the completion that delivers s.
func settlementCompletion(s store.Settlement) sched.Completion {
	if s.Status != store.OutcomeOK {
		return sched.Completion{Key: s.Key, Outcome: sched.Outcome{Err: s.Error}}
	}
	return sched.Completion{Key: s.Key, Outcome: sched.Outcome{OK: true, Value: s.Value}}
}

func timeoutReason(r store.Run) string {
	return fmt.Sprintf("run timed out after %s", time.Duration(r.Deadline-r.CreatedAt.UnixNano()).Round(time.Millisecond))
}

// waiting reports whether a run that just suspended has something to
// receive already (a settlement or a cancellation that arrived while it
// was deciding to suspend), so it must be driven again at once.
func (h *Host) waiting(ctx context.Context, rs *runState) (bool, error) {
	if rs.mb.len() > 0 {
		return true, nil
	}
	sets, err := h.cfg.Store.Settlements(ctx, rs.run.ID)
	if err != nil {
		return false, fmt.Errorf("drive %s: %w", rs.run.ID, err)
	}
	if len(sets) > 0 {
		return true, nil
	}
	r, err := h.cfg.Store.Run(ctx, rs.run.ID)
	if err != nil {
		return false, fmt.Errorf("drive %s: %w", rs.run.ID, err)
	}
	rs.run.Cancel = r.Cancel
	if r.Cancel == "" {
		return false, nil
	}
	outs, err := h.cfg.Store.Outcomes(ctx, rs.run.ID)
	if err != nil {
		return false, fmt.Errorf("drive %s: %w", rs.run.ID, err)
	}
	for _, o := range outs {
		if o.Key == store.CancelKey {
			return false, nil
		}
	}
	return true, nil
}

// cancelWaits reports whether run id has a cancellation requested and not
// yet delivered.
func (h *Host) cancelWaits(ctx context.Context, id string) bool {
	r, err := h.cfg.Store.Run(ctx, id)
	if err != nil || r.Cancel == "" || r.Status.Terminal() {
		return false
	}
	outs, err := h.cfg.Store.Outcomes(ctx, id)
	if err != nil {
		return false
	}
	for _, o := range outs {
		if o.Key == store.CancelKey {
			return false
		}
	}
	return true
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
	cm, err := h.compiledModule(ctx, run.ModuleHash)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: %w", runID, err)
	}
	defer h.release(cm)
	outs, err := st.Outcomes(ctx, runID)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: %w", runID, err)
	}
	recs := make([]sched.Record, len(outs))
	for i, o := range outs {
		recs[i] = fromStore(o)
	}
	rs := newRunState(run, DriveOptions{})
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
