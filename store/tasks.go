package store

import (
	"context"
	"fmt"
	"time"
)

// Activity tasks: the calls of activities that no function in the host's
// process serves, handed to workers in other processes (the worker
// protocol of docs/api.md). A task is created in the same Commit that
// records its op as pending (Batch.Tasks), claimed by one worker at a
// time under a lease, and ended by EndTask: either with the op's outcome
// (a Settlement the run receives like a promise's) or with a failed
// attempt that queues the next one.

// TaskState is where a task is in its life.
type TaskState string

// Task states.
const (
	TaskQueued   TaskState = "queued"   // waiting for a worker (from VisibleAt on)
	TaskClaimed  TaskState = "claimed"  // held by Owner until LeaseExpiry
	TaskDone     TaskState = "done"     // ended with the op's outcome
	TaskCanceled TaskState = "canceled" // its run was canceled or ended first
)

// Task is one activity call served by a remote worker. (RunID, Key) names
// it for good; Attempt names the current attempt, so (RunID, Key,
// Attempt) names one hand-out: a worker's heartbeat or end for an attempt
// that is no longer current fails with ErrConflict.
type Task struct {
	RunID   string
	Key     string // the op's lineage key
	Name    string // the activity's name
	Input   []byte // JSON
	Options []byte // the op's options as the host encodes them (retry policy); opaque here
	// Timeout bounds one attempt (ns; 0: none): a lease never runs past
	// ClaimedAt+Timeout.
	Timeout   int64
	Attempt   int // 1 for the first attempt
	State     TaskState
	VisibleAt int64  // unix ns: a queued task is not claimed before (a retry's backoff)
	Owner     string // the worker holding it, or that held it last
	ClaimedAt int64  // unix ns; the current (or last) attempt's claim
	Heartbeat int64  // unix ns; the last heartbeat of the attempt (0: none)
	Expiry    int64  // unix ns; the lease's end while claimed
	Progress  []byte // JSON the worker reported with its last heartbeat
	LastError string // the error of the previous attempt (of the last, once the call failed)
	// TraceParent is the W3C traceparent of the call op's span, the
	// parent of its attempts' spans (docs/observability.md); empty when
	// the run is not traced. Set when the task is queued.
	TraceParent string
	CreatedAt   time.Time
	Seq         int64 // creation order; set by the store
}

// IdempotencyKey is the key a worker passes to other systems: the same for
// every attempt of the call, and unique across runs.
func (t Task) IdempotencyKey() string { return t.RunID + "." + t.Key }

// TaskClaim asks ClaimTasks for work.
type TaskClaim struct {
	Owner string        // the worker's identity; not empty
	Names []string      // the activity names it serves; not empty
	Max   int           // at most this many tasks (>= 1)
	Now   int64         // unix ns
	TTL   time.Duration // the lease: Expiry = Now+TTL (capped by the attempt's Timeout)
}

// TaskEnd ends the current attempt of a task (see EndTask): with the op's
// outcome (Settle), or failed with the next attempt queued (Retry).
type TaskEnd struct {
	RunID   string
	Key     string
	Attempt int    // must be the task's current attempt
	Owner   string // must hold it; empty: any holder (a lease that expired)
	// Expired, set by the host's sweep of expired leases, ends the
	// attempt only if its lease has expired by Now.
	Expired bool
	Now     int64
	// Exactly one of Settle and Retry is set.
	Settle *Settlement // the op's outcome; its Attempts field counts the attempts made
	Retry  *TaskRetry
}

// TaskRetry queues the next attempt of a task after a failed one.
type TaskRetry struct {
	Error     string // the failed attempt's error (becomes LastError)
	VisibleAt int64  // unix ns: the next attempt is claimed from then on
}

// TaskQueue counts one activity name's tasks by state, for metrics.
type TaskQueue struct {
	Name    string
	Queued  int
	Claimed int
}

// TaskStore holds activity tasks. It is part of Store.
type TaskStore interface {
	// ClaimTasks hands up to c.Max queued tasks of c.Names, visible by
	// c.Now, to c.Owner: each becomes claimed with the lease c.Now+c.TTL
	// (capped at the attempt's ClaimedAt+Timeout). Tasks are taken in
	// fair order across runs: a run that queued many tasks at once does
	// not hold back the tasks other runs queue after it (start-time fair
	// queueing by run), and oldest first otherwise. Concurrent claims
	// never return the same attempt.
	ClaimTasks(ctx context.Context, c TaskClaim) ([]Task, error)
	// HeartbeatTask extends the lease of attempt of the task (run, key)
	// held by owner to now+ttl (capped by the attempt's timeout), and
	// records progress (nil keeps the last). It returns the task. It fails
	// with ErrNotFound for an unknown task and with ErrConflict when the
	// attempt is not current or not claimed by owner (CheckTaskAttempt).
	HeartbeatTask(ctx context.Context, runID, key string, attempt int, owner string, now int64, ttl time.Duration, progress []byte) (Task, error)
	// EndTask ends the current attempt as e says, in one transaction: with
	// e.Settle the task is done and the settlement is stored for the run
	// (to be delivered like a promise's); with e.Retry the next attempt is
	// queued. It fails with ErrNotFound for an unknown task and with
	// ErrConflict (changing nothing) when e.Attempt is not current, the
	// task is not claimed (by e.Owner, when given), or, with e.Expired,
	// its lease has not expired.
	EndTask(ctx context.Context, e TaskEnd) error
	// ExpiredTasks returns up to limit claimed tasks whose lease ended by
	// now, oldest lease first (in creation order among equal expiries).
	ExpiredTasks(ctx context.Context, now int64, limit int) ([]Task, error)
	// CancelTasks marks every queued or claimed task of the run canceled,
	// with reason as LastError; a worker's next heartbeat or end of one
	// fails with ErrConflict.
	CancelTasks(ctx context.Context, runID, reason string) error
	// Tasks returns every task of a run, in creation order.
	Tasks(ctx context.Context, runID string) ([]Task, error)
	// Task returns the task of a run's call at key, or ErrNotFound.
	Task(ctx context.Context, runID, key string) (Task, error)
	// TaskQueues counts the queued and claimed tasks of each activity
	// name that has any, by name.
	TaskQueues(ctx context.Context) ([]TaskQueue, error)
}

// LeaseEnd is the expiry of a lease taken or renewed at now for ttl on an
// attempt claimed at claimedAt with the given timeout (0: none). Every
// backend computes it so.
func LeaseEnd(now int64, ttl time.Duration, claimedAt, timeout int64) int64 {
	e := now + int64(ttl)
	if timeout > 0 && claimedAt+timeout < e {
		e = claimedAt + timeout
	}
	return e
}

// CheckTaskAttempt checks that attempt of t is current and claimed (by
// owner when not empty), and, with expired, that its lease has ended by
// now. A lease that expired is not lost until the host's sweep ends its
// attempt (EndTask with Expired): until then its holder may still
// heartbeat or end it. The error wraps ErrConflict and says why. Every
// backend checks heartbeats and ends so.
func CheckTaskAttempt(t Task, attempt int, owner string, now int64, expired bool) error {
	name := fmt.Sprintf("task %s.%s (activity %q)", t.RunID, t.Key, t.Name)
	switch {
	case t.State == TaskDone:
		return fmt.Errorf("%s has ended already: %w", name, ErrConflict)
	case t.State == TaskCanceled:
		return fmt.Errorf("%s was canceled (%s): %w", name, t.LastError, ErrConflict)
	case attempt != t.Attempt:
		return fmt.Errorf("%s: attempt %d is not current (the current attempt is %d): %w", name, attempt, t.Attempt, ErrConflict)
	case t.State != TaskClaimed:
		return fmt.Errorf("%s: attempt %d is not claimed: %w", name, attempt, ErrConflict)
	case owner != "" && owner != t.Owner:
		return fmt.Errorf("%s: attempt %d is held by %q, not %q: %w", name, attempt, t.Owner, owner, ErrConflict)
	case expired && t.Expiry > now:
		return fmt.Errorf("%s: the lease of attempt %d has not expired: %w", name, attempt, ErrConflict)
	}
	return nil
}

// ForQueue returns t as Batch.Tasks stores it: claimed by its Owner when
// its State is TaskClaimed, else queued with no owner or lease; attempt
// at least 1; no heartbeat, progress or last error. Every backend calls
// it, so they agree.
func (t Task) ForQueue() Task {
	if t.State != TaskClaimed {
		t.State, t.Owner, t.ClaimedAt, t.Expiry = TaskQueued, "", 0, 0
	}
	t.Attempt = max(t.Attempt, 1)
	t.Heartbeat, t.Progress, t.LastError = 0, nil, ""
	return t
}
