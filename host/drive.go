package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/modules"

	"github.com/skeinrun/skein/host/internal/sched"
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
	// claimed is the run as the claim read it, for the drive's first
	// read of the run; nil once taken or when the claim did not read it.
	claimed *store.Run
}

// resumeTo is what Resume asks of a drive: the run, failed or diverged
// included, is executed again, on the module given (its own when empty).
type resumeTo struct{ module string }

// errActive is returned by Drive for a run this process drives already.
var errActive = errors.New("the run is being driven in this process already")

// Drive executes a run until it completes, fails, diverges, suspends or
// is paused (Pause), replaying its recorded history first. A run that is already terminal is
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
	if o.resume == nil && !h.preclaimLive(runID, o.Owner) {
		// An ended run is returned without a lease: nothing executes, and
		// what it recorded is final. (A run this host created leased, its
		// lease unexpired, cannot have ended: only its holder can end it.)
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
	rs.Board = &h.tasks
	h.active[runID] = rs
	return rs, nil
}

func (h *Host) deactivate(runID string) {
	h.mu.Lock()
	rs := h.active[runID]
	delete(h.active, runID)
	h.mu.Unlock()
	if rs != nil && rs.MB.Len() > 0 {
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
		rs.MB.Put(c)
	}
	return ok
}

// drive executes the run of rs until it ends or suspends (or, with
// WaitTimers, until it ends): execution after execution, each replaying
// the journal, evicted ones at once and suspended ones when woken.
func (h *Host) drive(ctx context.Context, rs *runState) (store.Run, error) {
	runID := rs.Run.ID
	rs.Activating = time.Now() // activation latency (metrics.go)
	run, err := h.driveStart(ctx, runID, rs.opts.resume, rs.opts.hold)
	if err != nil || run.Status.Terminal() && rs.opts.resume == nil {
		return run, err
	}
	cm, err := h.modules.Compiled(ctx, run.ModuleHash)
	if err != nil {
		return run, fmt.Errorf("drive %s: %w", runID, err)
	}
	defer h.modules.Release(cm)
	defer func() { rs.Close() }() // rs is replaced after a suspension
	rs.Run = run
	if h.sim != nil {
		rs.World = exec.SimWorld{Run: h.sim.Run(runID, run.StartTime), Cfg: h.sim.Cfg}
	}
	// The running status is committed as the first execution starts
	// (execute), without waiting for it.
	rs.Run.Status, rs.Run.WakeAt, rs.Run.Error = store.RunRunning, 0, ""
	queueRun(rs)
	rs.StatusDue = true
	for {
		x, outs, err := h.execute(ctx, rs, cm)
		if err != nil {
			return h.driveFailed(ctx, rs, err)
		}
		switch x.State {
		case exec.Unrecorded:
			return h.driveFailed(ctx, rs, fmt.Errorf("drive %s: %w", runID, x.Failure))
		case exec.Evicted:
			h.metrics.Of(runID).EvictReplay.Add(1)
			rs.Dropped(x.LastSeq)
			continue
		case exec.Paused:
			return h.pausedStop(ctx, rs, x)
		case exec.Suspended:
			next, err := h.suspended(ctx, rs, x, outs)
			if err != nil {
				return h.driveFailed(ctx, rs, err)
			}
			if next == nil {
				return rs.Run, nil
			}
			rs = next
			continue
		}
		if err := h.endStatus(ctx, rs, x); err != nil {
			return h.driveFailed(ctx, rs, err)
		}
		if x.State == exec.Done {
			markOrphans(rs, outs, x.S)
		}
		if err := h.finish(ctx, rs); err != nil {
			return h.driveFailed(ctx, rs, err)
		}
		var runErr error
		if rs.Run.Status == store.RunDiverged {
			runErr = x.Failure
		}
		return rs.Run, runErr
	}
}

// driveStart reads the run a drive is about to execute, or takes it from
// the claim of the lease the drive holds, which read it in the claim's
// transaction. A run that has ended is returned as it is (and is an
// error for a resume).
func (h *Host) driveStart(ctx context.Context, runID string, to *resumeTo, hold *leaseHold) (store.Run, error) {
	var run store.Run
	if hold != nil && hold.claimed != nil && hold.claimed.ID == runID {
		run, hold.claimed = *hold.claimed, nil
	} else {
		var err error
		if run, err = h.cfg.Store.Run(ctx, runID); err != nil {
			return store.Run{}, fmt.Errorf("drive %s: %w", runID, err)
		}
	}
	switch {
	case to != nil && run.Status.Final():
		return run, fmt.Errorf("resume %s: the run is %s: %w", runID, run.Status, ErrTerminal)
	case to != nil:
		if to.module != "" {
			run.ModuleHash = to.module
		}
		run.Result = nil
	}
	return run, nil
}

// execute runs one execution of the run: it loads the journal and the
// inbox and instantiates the module, which replays the journal and goes
// on from its end.
func (h *Host) execute(ctx context.Context, rs *runState, cm *modules.Module) (*exec.Exec, []store.Outcome, error) {
	runID := rs.Run.ID
	if rs.Activating.IsZero() {
		rs.Activating = time.Now()
	}
	outs, err := h.cfg.Store.Outcomes(ctx, runID)
	if err != nil {
		return nil, nil, fmt.Errorf("drive %s: load outcomes: %w", runID, err)
	}
	if err := h.inbox(ctx, rs, outs); err != nil {
		return nil, nil, err
	}
	recs := make([]sched.Record, len(outs))
	for i, o := range outs {
		recs[i] = exec.FromStore(o)
	}
	if len(recs) > 0 {
		rs.Replaying(outs)
	}
	if h.tracer != nil {
		rs.NoteOpStarts(outs) // tracing.go
	}
	rs.MB.Restale()
	if h.hooks.onExec != nil {
		h.hooks.onExec(runID)
	}
	if rs.opts.OnExecution != nil {
		rs.opts.OnExecution()
	}
	h.emitStarted(rs.Run, len(recs) > 0)
	h.metrics.Of(runID).Execution(len(recs) > 0)
	h.log.Debug("execution started", "run", runID, "workflow", rs.Run.Workflow, "replay", len(recs) > 0, "records", len(recs))
	if rs.StatusDue {
		// The run's running status commits while the instance starts:
		// the first op does not wait for it, and the execution's first
		// flush (or the run's end) does (flushAsync keeps commits in
		// order). A failed commit is the drive's error (stUnrecorded).
		rs.StatusDue = false
		if err := rs.FlushAsync(h.execHost()); err != nil {
			return nil, nil, fmt.Errorf("drive %s: %w", runID, err)
		}
	}
	x := exec.NewExec(h.execHost(), rs.RunState, recs)
	start := time.Now()
	h.runExec(ctx, "drive", cm, x)
	h.traceExecution(rs, x, start, len(recs)) // tracing.go
	return x, outs, nil
}

// suspended records a suspended execution and waits for the run to be
// due again if the drive should (a settlement arrived meanwhile, or
// WaitTimers). It returns the run state of the next execution, or nil
// when the drive ends here.
func (h *Host) suspended(ctx context.Context, rs *runState, x *exec.Exec, outs []store.Outcome) (*runState, error) {
	runID := rs.Run.ID
	rs.Run.Status = store.RunSuspended
	markOrphans(rs, outs, x.S)
	rs.Dropped(x.LastSeq)
	if err := h.commitRun(ctx, rs); err != nil {
		return nil, err
	}
	h.emitSuspended(rs.Run)
	h.metrics.Of(runID).EvictSuspend.Add(1)
	h.log.Debug("run suspended", "run", runID, "wake_at", rs.Run.WakeAt)
	rs.Close()
	if rs.MB.Paused() {
		return nil, nil // held until unpaused (pause.go)
	}
	again, err := h.waiting(ctx, rs)
	if err != nil {
		return nil, err
	}
	if !again {
		if !rs.opts.WaitTimers || rs.Run.WakeAt == 0 {
			return nil, nil
		}
		t := time.NewTimer(time.Until(time.Unix(0, rs.Run.WakeAt)))
		select {
		case <-t.C:
		case <-rs.MB.Sig():
			// A settlement or a cancellation reached the run while it
			// waited for its timer (it is in the store: the next
			// execution's inbox delivers it).
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	next := newRunState(rs.Run, rs.opts)
	next.Board = rs.Board
	next.World = rs.World
	h.mu.Lock()
	h.active[runID] = next
	h.mu.Unlock()
	next.Run.Status, next.Run.WakeAt = store.RunRunning, 0
	if err := h.commitRun(ctx, next); err != nil {
		return nil, err
	}
	return next, nil
}

// endStatus sets the status an execution that did not suspend ends the
// run with. An execution interrupted by ctx (a shutdown) commits what it
// recorded, leaves the run running and returns ctx's error.
func (h *Host) endStatus(ctx context.Context, rs *runState, x *exec.Exec) error {
	switch x.State {
	case exec.Done:
		// Steps still in flight are recorded pending: the journal of an
		// ended run holds every op it issued (docs/design.md).
		x.S.RecordUnsettledSteps()
		canceled, reason := x.S.Canceled()
		switch {
		case canceled:
			rs.Run.Status, rs.Run.Error = store.RunCanceled, sched.CanceledPrefix+reason
			if x.Result.OK {
				rs.Run.Result = x.Result.Value
			}
		case x.Continued != nil:
			// The successor is created in the commit that ends the run.
			rs.Run.Status, rs.Run.Result = store.RunContinued, x.Continued
			rs.Batch.Creates = append(rs.Batch.Creates, h.successor(rs, x, x.Continued))
		case x.Result.OK:
			rs.Run.Status, rs.Run.Result = store.RunCompleted, x.Result.Value
		default:
			rs.Run.Status, rs.Run.Error = store.RunFailed, x.Result.Err
		}
	case exec.Stopped:
		// The run did not take its cancellation in time (watchdog.go):
		// it ends canceled, and its end decides its children (finish).
		rs.Run.Status, rs.Run.Error = store.RunCanceled, sched.CanceledPrefix+x.Failure.Error()
	case exec.Diverged:
		rs.Batch.Outcomes = nil // nothing a diverging replay made is kept
		rs.Run.Status, rs.Run.Error = store.RunDiverged, x.Failure.Error()
	default:
		if ctx.Err() != nil {
			// Interrupted (shutdown): what was recorded is committed
			// and the run stays running, to resume by replay later.
			if err := h.commitRun(ctx, rs); err != nil {
				return err
			}
			return fmt.Errorf("drive %s: %w", rs.Run.ID, ctx.Err())
		}
		rs.Run.Status, rs.Run.Error = store.RunFailed, x.Failure.Error()
	}
	rs.Run.WakeAt = 0
	return nil
}

// finish commits the run's end: with the settlement of its parent's op
// (a child run) and, under a lease, the lease's release; then tells the
// parent, the subscribers, the metrics and the log.
func (h *Host) finish(ctx context.Context, rs *runState) error {
	var toParent *sched.Completion
	if rs.Run.Parent != "" && rs.Run.Status.Terminal() && rs.World.SettlesParent() {
		key, err := h.childKey(ctx, rs.Run.Parent, rs.Run.ID)
		if err != nil {
			return fmt.Errorf("drive %s: %w", rs.Run.ID, err)
		}
		out := exec.ChildOutcome(rs.Run)
		toParent = &sched.Completion{Key: key, Outcome: out}
		set := store.Settlement{RunID: rs.Run.Parent, Key: key, Status: store.OutcomeOK, Value: out.Value}
		if !out.OK {
			set.Status, set.Value, set.Error = store.OutcomeError, nil, out.Err
		}
		rs.Batch.Settlements = append(rs.Batch.Settlements, set)
	}
	if rs.Run.Status.Terminal() {
		h.cancelTasks(ctx, rs.RunState, "the run ended ("+string(rs.Run.Status)+")")
	}
	ends := exec.QueueParentEnded(rs.RunState)
	// Under a lease, the run's last commit releases it too.
	rs.Batch.Release = rs.Lease != nil
	if err := h.commitRun(ctx, rs); err != nil {
		return err
	}
	if toParent != nil {
		h.forgetChildKey(rs.Run.ID)
	}
	if rs.opts.hold != nil {
		rs.opts.hold.released = true
	}
	h.runEnded(rs.Run)
	h.traceRunEnd(rs.Run) // tracing.go
	h.metrics.Of(rs.Run.ID).RunEnded(rs.Run.Status)
	h.logEnded(rs.Run)
	if toParent != nil && !h.deliver(rs.Run.Parent, *toParent) {
		h.signal()
	}
	if rs.Run.Status == store.RunContinued {
		h.signal() // a worker (Work) starts the successor
	}
	if rs.Run.Status.Terminal() {
		rs.Ended.Store(true)
	}
	if len(ends) > 0 {
		rs.World.ParentEnded(ctx, h.execHost(), rs.RunState, ends)
	}
	return nil
}

// markOrphans queues updates of the orphaned flag of stored outcomes: set
// where the execution never reached the key, cleared where it did.
func markOrphans(rs *runState, outs []store.Outcome, s *sched.Sched) {
	for _, o := range outs {
		if reached := s.Issued(o.Key); reached == o.Orphaned {
			o.Orphaned = !reached
			rs.Batch.Outcomes = append(rs.Batch.Outcomes, store.RunOutcome{RunID: rs.Run.ID, Outcome: o})
		}
	}
}

// queueRun queues the run's current status (stamped now) for the next
// commit.
func queueRun(rs *runState) {
	rs.Run.UpdatedAt = time.Now()
	rs.Run.Error = store.CleanText(rs.Run.Error)
	rs.Batch.Runs = append(rs.Batch.Runs, rs.Run)
}

// commitRun commits queued records with the run's current status.
func (h *Host) commitRun(ctx context.Context, rs *runState) error {
	queueRun(rs)
	if err := rs.Flush(context.WithoutCancel(ctx), h.cfg.Store); err != nil {
		return fmt.Errorf("drive %s: %w", rs.Run.ID, err)
	}
	return nil
}
