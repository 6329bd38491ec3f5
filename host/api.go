package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/sched"
	"github.com/skeinrun/skein/store"
)

// Errors of the run-control API, matched with errors.Is.
var (
	// ErrNotFound: no such module, run or promise (it is store.ErrNotFound).
	ErrNotFound = store.ErrNotFound
	// ErrConflict: a promise settled twice (it is store.ErrConflict).
	ErrConflict = store.ErrConflict
	// ErrTerminal: the run has ended; it cannot be canceled.
	ErrTerminal = errors.New("the run has ended")
	// ErrInvalid: a request broke a rule (a bad run id, input that is not
	// JSON, an unknown workflow); the message says which.
	ErrInvalid = errors.New("invalid request")
)

// Resolve settles the external promise whose full id is "{run}.{key}"
// (see Future.Key in the guest SDK) with value (JSON), or with an error
// when errMsg is not empty. A promise settles exactly once: a second
// Resolve fails with ErrConflict, an unknown id with ErrNotFound. The
// settlement is durable when Resolve returns; the run receives it at its
// next idle point, now if it is active in this process, else when a
// worker (Work) or a Drive picks the run up.
func (h *Host) Resolve(ctx context.Context, fullID string, value json.RawMessage, errMsg string) error {
	runID, key, err := h.splitFullID(ctx, fullID)
	if err != nil {
		return fmt.Errorf("resolve %q: %w", fullID, err)
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
		return fmt.Errorf("resolve %s: %w: %w", fullID, h.payloadError("the promise value", n), ErrInvalid)
	}
	if err := h.cfg.Store.Settle(ctx, set); err != nil {
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
	// Concurrency is the most runs driven at once; default 2*GOMAXPROCS.
	Concurrency int
	// Poll is how often the store is asked for due runs when nothing
	// signals new work; default 250ms.
	Poll time.Duration
	// Grace is how long running executions may go on after ctx ends
	// before they are interrupted; default 10s. What they recorded stays.
	Grace time.Duration
}

// Work drives runs until ctx ends: pending runs, runs left running by a
// crashed process, suspended runs whose timer is due, that got a
// settlement or a cancellation, or whose deadline passed. Start, Resolve
// and Cancel on this host signal it at once. When ctx ends Work stops
// taking runs, lets the ones in progress go on for Grace, interrupts the
// rest (they stay durable and resume on the next start) and returns nil.
func (h *Host) Work(ctx context.Context, o WorkOptions) error {
	if o.Concurrency <= 0 {
		o.Concurrency = 2 * runtime.GOMAXPROCS(0)
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	if o.Grace <= 0 {
		o.Grace = 10 * time.Second
	}
	// Drives outlive ctx by the grace period, then are interrupted.
	dctx, interrupt := context.WithCancel(context.WithoutCancel(ctx))
	defer interrupt()
	var wg sync.WaitGroup
	slots := make(chan struct{}, o.Concurrency)
	poll := time.NewTicker(o.Poll)
	defer poll.Stop()
	for ctx.Err() == nil {
		due, err := h.cfg.Store.DueRuns(ctx, time.Now().UnixNano(), 4*o.Concurrency)
		if err != nil && ctx.Err() == nil {
			h.log.Error("worker: list due runs", "err", err)
		}
		for _, r := range due {
			if h.isActive(r.ID) {
				continue
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			wg.Add(1)
			go func(id string) {
				defer func() { <-slots; wg.Done() }()
				_, err := h.Drive(dctx, id, DriveOptions{})
				switch {
				case err == nil, errors.Is(err, errActive):
				case IsDivergence(err):
					h.log.Warn("run diverged", "run", id, "err", err)
				case dctx.Err() != nil:
					h.log.Info("run interrupted by shutdown; it resumes on the next start", "run", id)
				default:
					h.log.Error("drive run", "run", id, "err", err)
				}
				h.signal() // a slot is free; a parent may be due
			}(r.ID)
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

// splitFullID splits "{run}.{key}" into a stored run's id and the key. A
// child run's id has dots too ({parent}.{key}), so the longest prefix that
// names a run wins.
func (h *Host) splitFullID(ctx context.Context, fullID string) (string, string, error) {
	for i := strings.LastIndexByte(fullID, '.'); i > 0; i = strings.LastIndexByte(fullID[:i], '.') {
		runID, key := fullID[:i], fullID[i+1:]
		if key == "" {
			break
		}
		_, err := h.cfg.Store.Run(ctx, runID)
		if err == nil {
			return runID, key, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", "", err
		}
	}
	return "", "", fmt.Errorf("no run has a promise with this id (a promise id is {run}.{key}): %w", ErrNotFound)
}

func (h *Host) isActive(runID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.active[runID]
	return ok
}
