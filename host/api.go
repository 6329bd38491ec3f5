package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// Errors of the run-control API, matched with errors.Is.
var (
	// ErrNotFound: no such module, run or promise (it is store.ErrNotFound).
	ErrNotFound = store.ErrNotFound
	// ErrConflict: a promise settled twice with different outcomes (it is
	// store.ErrConflict).
	ErrConflict = store.ErrConflict
	// ErrAlreadySettled: Resolve found the promise settled already with
	// the same outcome (the same JSON value, or the same error text), so
	// a retried settlement changed nothing. Callers may treat it as
	// success; the server answers 200 with "already_settled".
	ErrAlreadySettled = errors.New("the promise is settled already with the same outcome")
	// ErrTerminal: the run has ended; it cannot be canceled (nor resumed,
	// once completed or canceled).
	ErrTerminal = errors.New("the run has ended")
	// ErrInvalid: a request broke a rule (a bad run id, input that is not
	// JSON, an unknown workflow); the message says which.
	ErrInvalid = errors.New("invalid request")
)

// Resolve settles the external promise whose full id is "{run}.{key}"
// (see Future.Key in the guest SDK) with value (JSON), or with an error
// when errMsg is not empty. A promise settles exactly once: a second
// Resolve with the same outcome fails with ErrAlreadySettled (nothing
// changes), with another one with ErrConflict; an unknown id fails with
// ErrNotFound. The
// settlement is durable when Resolve returns; the run receives it at its
// next idle point, now if it is active in this process, else when a
// worker (Work) or a Drive picks the run up.
func (h *Host) Resolve(ctx context.Context, fullID string, value json.RawMessage, errMsg string) error {
	errMsg = store.CleanText(errMsg)
	runID, key, status, err := h.splitFullID(ctx, fullID)
	if err != nil {
		return fmt.Errorf("resolve %q: %w", fullID, err)
	}
	if status == store.RunContinued {
		return fmt.Errorf("resolve %s: %w", fullID, &ContinuedError{RunID: runID, Successor: ContinuedRunID(runID)})
	}
	if status == store.RunReset {
		return fmt.Errorf("resolve %s: %w", fullID, h.resetSettleError(ctx, runID))
	}
	set := store.Settlement{RunID: runID, Key: key, Status: store.OutcomeOK, Value: value, CreatedAt: time.Now()}
	c := sched.Completion{Key: key, Outcome: sched.Outcome{OK: true, Value: value}}
	if errMsg != "" {
		set.Status, set.Value, set.Error = store.OutcomeError, nil, errMsg
		c.Outcome = sched.Outcome{Err: errMsg}
	} else {
		if len(value) == 0 {
			value = json.RawMessage("null")
			set.Value, c.Outcome.Value = value, value
		}
		if !json.Valid(value) {
			return fmt.Errorf("resolve %s: the value is not valid JSON: %.100q", fullID, value)
		}
	}
	if n := len(value) + len(errMsg); n > h.cfg.MaxPayloadBytes {
		return invalidf("resolve %s: %w", fullID, h.payloadError("the promise value", n))
	}
	if errMsg == "" {
		if err := h.checkSettlement(ctx, runID, key, value); err != nil {
			if _, ok := errors.AsType[*ShapeError](err); ok {
				return fmt.Errorf("resolve %s: %w (the promise is still pending)", fullID, err)
			}
			return fmt.Errorf("resolve %s: %w", fullID, err)
		}
	}
	if err := h.cfg.Store.Settle(ctx, set); err != nil {
		if errors.Is(err, ErrConflict) {
			return h.settledAgain(ctx, fullID, set, err)
		}
		return fmt.Errorf("resolve %s: %w", fullID, err)
	}
	if !h.deliver(runID, c) {
		h.signal()
	}
	return nil
}

// Cancel requests the cancellation of a run with a reason (default
// "canceled"). Every task's Context then reports it, pending sleeps,
// promises, activity calls and child runs fail with a cancellation error
// the workflow can handle (to compensate), children are canceled too, and
// the run ends canceled. It returns the run as stored; ErrNotFound for an
// unknown run, ErrTerminal for one that has ended. Canceling twice is
// harmless.
func (h *Host) Cancel(ctx context.Context, runID, reason string) (store.Run, error) {
	if reason == "" {
		reason = "canceled"
	}
	reason = store.CleanText(reason)
	r, err := h.cfg.Store.RequestCancel(ctx, runID, reason)
	if err != nil {
		return store.Run{}, fmt.Errorf("cancel %s: %w", runID, err)
	}
	if r.Status.Terminal() {
		return r, fmt.Errorf("cancel %s: the run is %s: %w", runID, r.Status, ErrTerminal)
	}
	if !h.deliver(runID, sched.Completion{Key: sched.CancelKey, Outcome: sched.Outcome{Err: r.Cancel}}) {
		h.signal()
	}
	return r, nil
}

// WorkOptions tune Work.
type WorkOptions struct {
	// Concurrency is the most runs driven at once; default 8*GOMAXPROCS
	// (runs spend much of their time waiting for the store; see
	// docs/PERFORMANCE.md).
	Concurrency int
	// Poll is how often the store is asked for due runs when nothing
	// signals new work; default 250ms. It bounds how late a worker sees a
	// timer come due or a settlement made by another worker.
	Poll time.Duration
	// Grace is how long running executions may go on after ctx ends
	// before they are interrupted; default 10s. What they recorded stays.
	Grace time.Duration
	// Owner names this worker in the leases it takes (and in the lease
	// history); default "{hostname}-{pid}-{random}". Workers sharing a
	// store must have different names.
	Owner string
	// LeaseTTL is how long a lease on a run lasts unless renewed; default
	// 10s. A worker renews the leases of the runs it drives every
	// LeaseTTL/3; the runs of a worker that died are taken over by
	// another one LeaseTTL after its last renewal.
	LeaseTTL time.Duration
	// RetryBackoff is how long a run whose drive failed (its commits
	// failed: the database is full or damaged; its module does not
	// compile) waits before it is driven again: the worker keeps its
	// lease that long. It doubles with each failure in a row, up to
	// MaxRetryBackoff. Defaults 1s and 1m.
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
}

// DefaultLeaseTTL is the default of WorkOptions.LeaseTTL.
const DefaultLeaseTTL = 10 * time.Second

// Work drives runs until ctx ends: pending runs, runs left running by a
// crashed worker, suspended runs whose timer is due, that got a
// settlement or a cancellation, or whose deadline passed. Start, Resolve
// and Cancel on this host signal it at once; otherwise it polls the store
// every Poll.
//
// Work takes a lease on every run before driving it (Store.ClaimRuns), so
// any number of workers, in this process or others sharing the store,
// split the runs and never drive one run at once: a run is active on at
// most one worker. The lease is renewed while the run executes and
// released when it suspends or ends; every write of the run is fenced by
// it, so a worker that lost its lease (it stalled past the expiry and
// another worker claimed the run) can record nothing more for the run and
// stops driving it. The runs of a worker that died are claimed by another
// one when their leases expire.
//
// Work also starts the runs of due schedule slots (scheduler.go; any
// number of workers may share the schedules of a store), and deletes the
// runs that ended more than Config.Retention ago (retention.go).
//
// When ctx ends Work stops taking runs, lets the ones in progress go on
// for Grace, interrupts the rest (they stay durable and resume on the
// next start, or on another worker at once: their leases are released)
// and returns nil.
func (h *Host) Work(ctx context.Context, o WorkOptions) error {
	o.fill()
	h.log.Info("worker: started", "owner", o.Owner, "lease_ttl", o.LeaseTTL, "concurrency", o.Concurrency, "poll", o.Poll)
	// Drives outlive ctx by the grace period, then are interrupted.
	dctx, interrupt := context.WithCancel(context.WithoutCancel(ctx))
	defer interrupt()
	var wg sync.WaitGroup
	slots := make(chan struct{}, o.Concurrency)
	poll := time.NewTicker(o.Poll)
	defer poll.Stop()
	var outage claimOutage
	var services sync.WaitGroup
	h.startServices(ctx, &services, o)
	defer services.Wait()
	for ctx.Err() == nil {
		// Only this loop takes slots, so claiming no more runs than are
		// free never blocks below, and no lease is held by a run waiting
		// for a slot.
		if free := o.Concurrency - len(slots); free > 0 {
			now := time.Now().UnixNano()
			claimed, err := h.cfg.Store.ClaimRuns(ctx, o.Owner, now, o.LeaseTTL, free)
			if ctx.Err() == nil {
				outage.report(h.log, err)
			}
			h.metrics.RunsClaimed(claimed, now) // leases, and the queue wait of each run
			for _, c := range claimed {
				slots <- struct{}{}
				wg.Add(1)
				go func(c store.ClaimedRun) {
					defer func() { <-slots; wg.Done() }()
					h.driveLeased(dctx, c, o)
					h.signal() // a slot is free; a parent may be due
				}(c)
			}
		}
		if h.cfg.RemoteActivities {
			h.sweepTasks(ctx)
		}
		select {
		case <-ctx.Done():
		case <-h.wake:
		case <-poll.C:
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(o.Grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		h.log.Warn("worker: grace period over; interrupting the runs still executing", "grace", o.Grace)
		interrupt()
		<-done
	}
	return nil
}

// claimOutage keeps the worker's log readable while the store cannot be
// reached: the first failed claim is logged, then one line a minute while
// claims keep failing, and one when they work again.
type claimOutage struct {
	failures   int
	since, log time.Time
}

func (c *claimOutage) report(log *slog.Logger, err error) {
	now := time.Now()
	switch {
	case err == nil && c.failures > 0:
		log.Info("worker: claims work again", "failed_claims", c.failures, "outage", now.Sub(c.since).Round(time.Millisecond))
		*c = claimOutage{}
	case err == nil:
	case c.failures == 0:
		log.Error("worker: claim due runs", "err", err)
		c.failures, c.since, c.log = 1, now, now
	default:
		c.failures++
		if now.Sub(c.log) >= time.Minute {
			log.Error("worker: claims still failing", "failed_claims", c.failures, "since", c.since, "err", err)
			c.log = now
		}
	}
}

// splitFullID splits "{run}.{key}" into a stored run's id and the key. A
// child run's id has dots too ({parent}.{key}), so the longest prefix that
// names a run wins. It returns the run's status too.
func (h *Host) splitFullID(ctx context.Context, fullID string) (string, string, store.RunStatus, error) {
	for i := strings.LastIndexByte(fullID, '.'); i > 0; i = strings.LastIndexByte(fullID[:i], '.') {
		runID, key := fullID[:i], fullID[i+1:]
		if key == "" {
			break
		}
		r, err := h.cfg.Store.Run(ctx, runID)
		if err == nil {
			return runID, key, r.Status, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", "", "", err
		}
	}
	return "", "", "", fmt.Errorf("no run has a promise with this id (a promise id is {run}.{key}): %w", ErrNotFound)
}

func (h *Host) isActive(runID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.active[runID]
	return ok
}

// settledAgain is Resolve's error for a promise that was settled before:
// ErrAlreadySettled when the stored settlement is set's outcome, else
// the conflict, saying what the promise holds.
func (h *Host) settledAgain(ctx context.Context, fullID string, set store.Settlement, conflict error) error {
	held, found, err := h.settlementOf(ctx, set.RunID, set.Key)
	if err != nil {
		return fmt.Errorf("resolve %s: %w (reading its settlement: %v)", fullID, conflict, err)
	}
	if !found {
		return fmt.Errorf("resolve %s: %w", fullID, conflict)
	}
	if held.Status == set.Status && held.Error == set.Error && (set.Status != store.OutcomeOK || jsonEqual(held.Value, set.Value)) {
		return fmt.Errorf("resolve %s: %w", fullID, ErrAlreadySettled)
	}
	what := fmt.Sprintf("the value %.200s", held.Value)
	if held.Status != store.OutcomeOK {
		what = fmt.Sprintf("the error %.200q", held.Error)
	}
	return fmt.Errorf("resolve %s: the promise is settled already with another outcome, %s: %w", fullID, what, ErrConflict)
}

// settlementOf finds the settlement of the promise at key of run: still
// waiting for delivery, or delivered into the run's outcome table. It
// looks at the waiting ones twice, around the outcomes, so a delivery in
// between is not missed.
func (h *Host) settlementOf(ctx context.Context, runID, key string) (store.Settlement, bool, error) {
	st := h.cfg.Store
	for i := 0; i < 2; i++ {
		sets, err := st.Settlements(ctx, runID)
		if err != nil {
			return store.Settlement{}, false, err
		}
		for _, s := range sets {
			if s.Key == key {
				return s, true, nil
			}
		}
		if i == 1 {
			break
		}
		o, err := st.Outcome(ctx, runID, key)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.Settlement{}, false, err
		}
		if err == nil && o.Status != store.OutcomePending {
			return store.Settlement{RunID: runID, Key: key, Status: o.Status, Value: o.Value, Error: o.Error}, true, nil
		}
	}
	return store.Settlement{}, false, nil
}

// fill gives the options left zero their defaults.
func (o *WorkOptions) fill() {
	if o.Concurrency <= 0 {
		o.Concurrency = 8 * runtime.GOMAXPROCS(0)
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	if o.Grace <= 0 {
		o.Grace = 10 * time.Second
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Owner == "" {
		o.Owner = defaultOwner()
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.MaxRetryBackoff <= 0 {
		o.MaxRetryBackoff = DefaultMaxRetryBackoff
	}
	o.MaxRetryBackoff = max(o.MaxRetryBackoff, o.RetryBackoff)
}

// startServices starts the loops a worker runs beside its runs, each
// until ctx ends, in wg: schedules (hooks.go, scheduler.go), the
// retention pruner (retention.go) and batch jobs (batchrun.go).
func (h *Host) startServices(ctx context.Context, wg *sync.WaitGroup, o WorkOptions) {
	wg.Go(func() { h.warnHookSecrets(ctx); h.runSchedules(ctx) })
	wg.Go(func() { h.runPruner(ctx) })
	wg.Go(func() { h.runBatches(ctx, o.Owner, o.LeaseTTL) })
}
