package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/taskboard"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/store"
)

// Remote activity tasks, the workers' side: what the worker protocol of
// the API (docs/api.md) does, for `skein serve` and for embedders.

// MaxClaim is the most tasks one claim hands out.
const MaxClaim = 256

// taskPoll is how often a waiting claim looks at the store again when no
// task was queued in this process: tasks another process queued, and
// retries whose backoff ends.
const taskPoll = 100 * time.Millisecond

// ClaimOptions asks ClaimTasks for work.
type ClaimOptions struct {
	Worker string   // the worker's identity, unique among live workers
	Names  []string // the activity names it serves
	Max    int      // how many tasks it can take now: 1 to MaxClaim
	// Wait is how long to wait for a task when none is queued (a long
	// poll); 0 answers at once.
	Wait time.Duration
}

// TaskRef names one attempt of a task, as its worker holds it.
type TaskRef struct {
	RunID   string
	Key     string
	Attempt int
	Worker  string
}

func (r TaskRef) String() string {
	return fmt.Sprintf("task %s.%s attempt %d", r.RunID, r.Key, r.Attempt)
}

// ClaimTasks hands up to o.Max queued tasks of o.Names to o.Worker, each
// under a lease of Config.TaskLeaseTTL, waiting up to o.Wait for one. It
// returns no task (and no error) when the wait ends, or ctx does.
func (h *Host) ClaimTasks(ctx context.Context, o ClaimOptions) ([]store.Task, error) {
	if err := checkClaim(o); err != nil {
		return nil, invalidf("claim tasks: %w", err)
	}
	deadline := time.Now().Add(o.Wait)
	for {
		queued := h.tasks.Wait()
		h.sweepTasks(ctx)
		ts, err := h.cfg.Store.ClaimTasks(ctx, store.TaskClaim{Owner: o.Worker, Names: o.Names, Max: o.Max,
			Now: time.Now().UnixNano(), TTL: h.cfg.TaskLeaseTTL})
		if err != nil || len(ts) > 0 {
			h.metrics.TasksClaimedNow(ts)
			return ts, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		// Wait on the board: a run may hand a new task over as it commits
		// it; other tasks wake the claim to look in the store again.
		w := h.tasks.Register(taskboard.Claim{Worker: o.Worker, Names: o.Names, Max: o.Max}, h.cfg.TaskLeaseTTL)
		t := time.NewTimer(min(left, taskPoll))
		select {
		case <-ctx.Done():
		case <-queued:
		case <-w.Given():
		case <-t.C:
		}
		t.Stop()
		if got := h.tasks.Unregister(w); len(got) > 0 {
			h.metrics.TasksClaimedNow(got)
			return got, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
	}
}

func checkClaim(o ClaimOptions) error {
	switch {
	case o.Worker == "" || len(o.Worker) > 200:
		return fmt.Errorf("the worker's identity must be 1 to 200 bytes (got %d)", len(o.Worker))
	case len(o.Names) == 0 || len(o.Names) > 1000:
		return fmt.Errorf("a claim names 1 to 1000 activities (got %d)", len(o.Names))
	case o.Max < 1 || o.Max > MaxClaim:
		return fmt.Errorf("a claim takes 1 to %d tasks (got %d)", MaxClaim, o.Max)
	}
	if err := exec.CheckNameText("the worker's identity", o.Worker); err != nil {
		return err
	}
	for _, n := range o.Names {
		if n == "" || len(n) > 200 {
			return fmt.Errorf("activity name %.40q must be 1 to 200 bytes", n)
		}
		if err := exec.CheckNameText("activity name", n); err != nil {
			return err
		}
	}
	return nil
}

// HeartbeatTask extends the lease of an attempt its worker holds and
// records progress (JSON; nil keeps the last). It fails with ErrNotFound
// for an unknown task and with ErrConflict when the attempt is no longer
// the worker's (it timed out and was handed out again, or ended) or the
// task was canceled: the worker should stop it.
func (h *Host) HeartbeatTask(ctx context.Context, ref TaskRef, progress json.RawMessage) (store.Task, error) {
	if len(progress) > 0 && !json.Valid(progress) {
		return store.Task{}, invalidf("heartbeat of %s: the progress is not valid JSON", ref)
	}
	if len(progress) > h.cfg.MaxPayloadBytes {
		return store.Task{}, invalidf("heartbeat of %s: %w", ref, h.payloadError("the progress", len(progress)))
	}
	t, err := h.cfg.Store.HeartbeatTask(ctx, ref.RunID, ref.Key, ref.Attempt, ref.Worker, time.Now().UnixNano(), h.cfg.TaskLeaseTTL, progress)
	if err != nil {
		return store.Task{}, taskRefError("heartbeat of", ref, err)
	}
	return t, nil
}

// CompleteTask records value (JSON) as the result of the call whose
// attempt ref is: the run receives it. It fails with ErrNotFound for an
// unknown task and with ErrConflict, changing nothing, when the attempt is
// not current (see HeartbeatTask).
func (h *Host) CompleteTask(ctx context.Context, ref TaskRef, value json.RawMessage) error {
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	if !json.Valid(value) {
		return invalidf("complete %s: the result is not valid JSON: %.100q", ref, value)
	}
	if len(value) > h.cfg.MaxPayloadBytes {
		return invalidf("complete %s: %w", ref, h.payloadError("the activity result", len(value)))
	}
	var t store.Task // a retried call's task, for its attempt's claim (timeline.go) and its span (tracing.go)
	if ref.Attempt > 1 || h.tracer != nil {
		var err error
		if t, err = h.task(ctx, ref.RunID, ref.Key); err != nil {
			return taskRefError("complete", ref, err)
		}
	}
	set := &store.Settlement{Status: store.OutcomeOK, Value: value, Attempts: ref.Attempt, CreatedAt: time.Now()}
	err := h.cfg.Store.EndTask(ctx, store.TaskEnd{RunID: ref.RunID, Key: ref.Key, Attempt: ref.Attempt, Owner: ref.Worker,
		Now: set.CreatedAt.UnixNano(), Settle: set})
	if err != nil {
		return taskRefError("complete", ref, err)
	}
	if ref.Attempt > 1 {
		h.taskAttempt(ctx, t, ref.Attempt, set.CreatedAt, "")
	}
	h.traceRemoteAttempt(t, ref.Attempt, ref.Worker, set.CreatedAt, "")
	h.metrics.Of(ref.RunID).TasksCompleted.Add(1)
	h.settled(ref.RunID, ref.Key, set)
	return nil
}

// FailTask records that the attempt ref failed with msg. The op's retry
// policy decides what follows, as for an in-process activity: the next
// attempt is queued after its backoff (retry true), or the call fails
// with msg. nonRetryable ends the retries. Errors as CompleteTask.
func (h *Host) FailTask(ctx context.Context, ref TaskRef, msg string, nonRetryable bool) (retry bool, err error) {
	if msg == "" {
		return false, invalidf("fail %s: the error message is empty", ref)
	}
	msg = store.CleanText(msg)
	if len(msg) > h.cfg.MaxPayloadBytes {
		return false, invalidf("fail %s: %w", ref, h.payloadError("the activity error", len(msg)))
	}
	t, err := h.task(ctx, ref.RunID, ref.Key)
	if err != nil {
		return false, taskRefError("fail", ref, err)
	}
	h.metrics.Of(ref.RunID).TasksFailed.Add(1)
	retry, err = h.endFailed(ctx, t, ref.Attempt, ref.Worker, msg, nonRetryable, false)
	if err != nil {
		return false, taskRefError("fail", ref, err)
	}
	return retry, nil
}

// taskRefError is err of what was asked for ref; an unknown task says
// so plainly.
func taskRefError(what string, ref TaskRef, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%s %s: run %q has no activity task at key %q: %w", what, ref, ref.RunID, ref.Key, store.ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w", what, ref, err)
}

// task returns the task (run, key).
func (h *Host) task(ctx context.Context, runID, key string) (store.Task, error) {
	return h.cfg.Store.Task(ctx, runID, key)
}

// endFailed ends a failed attempt of t by the op's retry policy: the next
// attempt queued after its backoff, or the call failed with msg.
func (h *Host) endFailed(ctx context.Context, t store.Task, attempt int, owner, msg string, nonRetryable, expired bool) (bool, error) {
	opts, err := abi.DecodeOpOptions(t.Options)
	if err != nil {
		return false, fmt.Errorf("task %s.%s: its stored options: %w", t.RunID, t.Key, err)
	}
	now := time.Now()
	e := store.TaskEnd{RunID: t.RunID, Key: t.Key, Attempt: attempt, Owner: owner, Expired: expired, Now: now.UnixNano()}
	retry := !nonRetryable && exec.Retryable(opts, errors.New(msg), attempt)
	if retry {
		e.Retry = &store.TaskRetry{Error: msg, VisibleAt: now.Add(exec.Backoff(opts, attempt)).UnixNano()}
	} else {
		e.Settle = &store.Settlement{Status: store.OutcomeError, Error: msg, Attempts: attempt, CreatedAt: now}
	}
	if err := h.cfg.Store.EndTask(ctx, e); err != nil {
		return false, err
	}
	h.taskAttempt(ctx, t, attempt, now, msg)
	h.traceRemoteAttempt(t, attempt, owner, now, msg)
	if retry {
		h.tasks.Notify()
		return true, nil
	}
	h.settled(t.RunID, t.Key, e.Settle)
	return false, nil
}

// settled hands the end of a task to its run: at once if it is active in
// this process, else to the worker loop that drives it.
func (h *Host) settled(runID, key string, s *store.Settlement) {
	s.RunID, s.Key = runID, key
	if !h.deliver(runID, settlementCompletion(*s)) {
		h.signal()
	}
}

// sweepTasks ends the attempts whose lease expired (their worker died,
// stalled or lost the network, or the attempt's timeout passed) as failed
// with a timeout error, retried by the op's policy. It runs at most once
// every taskPoll, from claims and from Work.
func (h *Host) sweepTasks(ctx context.Context) {
	if !h.tasks.SweepDue(taskPoll) {
		return
	}
	now := time.Now().UnixNano()
	ts, err := h.cfg.Store.ExpiredTasks(ctx, now, 100)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("activity tasks: find expired leases", "err", err)
		}
		return
	}
	for _, t := range ts {
		msg := fmt.Sprintf("activity %q: attempt %d timed out: worker %q sent no heartbeat for %s (its lease expired)",
			t.Name, t.Attempt, t.Owner, h.cfg.TaskLeaseTTL)
		if t.Timeout > 0 && t.Expiry >= t.ClaimedAt+t.Timeout {
			msg = fmt.Sprintf("activity %q timed out after %s (attempt %d)", t.Name, time.Duration(t.Timeout), t.Attempt)
		}
		h.metrics.Of(t.RunID).TasksTimedOut.Add(1)
		if _, err := h.endFailed(ctx, t, t.Attempt, "", msg, false, true); err != nil && !errors.Is(err, store.ErrConflict) {
			h.log.Warn("activity tasks: end an expired attempt", "run", t.RunID, "key", t.Key, "err", err)
		}
	}
}

// Tasks returns the activity tasks of a run (remote calls), in the order
// they were queued.
func (h *Host) Tasks(ctx context.Context, runID string) ([]store.Task, error) {
	ts, err := h.cfg.Store.Tasks(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("tasks of run %s: %w", runID, err)
	}
	return ts, nil
}
