// Package store defines the durable state of skein behind one interface:
// modules, runs and the outcomes of their durable operations.
//
// Implementations live in sub-packages (store/sqlite, later store/postgres)
// and must all pass the shared suite in store/storetest.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned (wrapped) when a module, run or promise does not
// exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned (wrapped) when a write contradicts what is
// stored: a promise settled a second time.
var ErrConflict = errors.New("conflict")

// ErrUnavailable is returned (wrapped) when the store cannot be reached:
// the database is down or restarting, or the connection to it was lost.
// Nothing was written (or a transaction was rolled back); the same call
// may succeed later.
var ErrUnavailable = errors.New("the store is unavailable")

// ErrLeaseLost is returned (wrapped) by RenewLease, ReleaseLease and a
// fenced Commit when the lease given is no longer the run's current one:
// another worker claimed the run since (a newer token), or the lease was
// released.
var ErrLeaseLost = errors.New("lease lost")

// ErrLeaseHeld is returned (wrapped, by a *LeaseHeldError) by ClaimRun
// when another worker's lease on the run is live.
var ErrLeaseHeld = errors.New("the run is leased by another worker")

// ErrImmutable is returned (wrapped) by a Commit that would change what
// is write-once: a settled outcome's status, value, error, kind or
// function, the status, result, error or module of a completed, canceled
// or continued run, or any outcome of such a run (see Batch). The error
// names the run (and the key); nothing of the batch is applied.
var ErrImmutable = errors.New("recorded outcomes and an ended run's result are write-once")

// ErrFull is returned (wrapped) by a write the database could not make
// for lack of space: the disk is full, or the database reached its size
// limit. Nothing of that write was applied; the same write may succeed
// once space is freed.
var ErrFull = errors.New("the database is full")

// ErrReleaseUnfenced is returned (wrapped) by a Commit of a batch with
// Release but no Fence: there is no lease to release.
var ErrReleaseUnfenced = errors.New("a batch that releases a lease needs a fence")

// RunStatus is the lifecycle state of a run.
type RunStatus string

// Run statuses.
const (
	RunPending   RunStatus = "pending"   // created, never activated
	RunRunning   RunStatus = "running"   // active on a worker
	RunSuspended RunStatus = "suspended" // every task waits; resumed by replay at WakeAt or on a settlement
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunDiverged  RunStatus = "diverged" // replay found a code change or nondeterminism; records kept
	RunCanceled  RunStatus = "canceled"
	// RunContinued: the run ended by continuing as new (skein.ContinueAsNew);
	// its successor, created in the same commit, carries on the workflow.
	RunContinued RunStatus = "continued"
	// RunReset: the run was reset (Host.Reset): a new run, ResetTo,
	// carries on from a prefix of its journal; it never executes again.
	RunReset RunStatus = "reset"
)

// ParentClose is the policy of a child run for the end of its parent.
type ParentClose string

// Parent close policies.
const (
	// ParentCloseCancel (the default, also written as "") requests the
	// cancellation of the child when its parent ends first.
	ParentCloseCancel ParentClose = "cancel"
	// ParentCloseAbandon leaves the child running when its parent ends
	// first: it is marked Abandoned and completes on its own.
	ParentCloseAbandon ParentClose = "abandon"
)

// Terminal reports whether the status is final.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunCanceled || s == RunContinued || s == RunReset
}

// Run is one execution of one workflow of one module with one input.
type Run struct {
	ID         string
	ModuleHash string
	Workflow   string
	Input      []byte // JSON
	Status     RunStatus
	Result     []byte // JSON, set when completed
	Error      string // set when failed or diverged
	Seed       uint64 // seed of the run's WASI random stream
	Parent     string // parent run id for child workflows; empty otherwise
	StartTime  int64  // unix ns; the run's virtual time starts here
	WakeAt     int64  // unix ns; 0 = no timer. When suspended: earliest timer deadline
	Deadline   int64  // unix ns; 0 = none. The run is canceled when it passes (run timeout)
	// Cancel is the reason given when a cancellation was requested; empty
	// until then. Only RequestCancel sets it; Batch run updates keep it.
	Cancel string
	// ParentClose is what the end of its parent does to a child run that
	// has not ended then (ParentCloseCancel or ParentCloseAbandon; empty
	// means cancel). Set when the run is created; Batch run updates keep it.
	ParentClose ParentClose
	// Abandoned is set when the parent of a child run with
	// ParentCloseAbandon ended before it: the run goes on on its own and
	// its end settles nothing anyone waits for. Only a batch's ParentEnded
	// sets it; Batch run updates keep it.
	Abandoned bool
	// TraceParent is the W3C traceparent the run was started under (its
	// run span's parent: docs/observability.md), or empty. Set when the
	// run is created; Batch run updates keep it.
	TraceParent string
	// Paused is set (Paused.At != 0) while an operator holds the run:
	// it is neither claimed nor due (PauseRun). Only PauseRun and
	// UnpauseRun change it; CreateRun and Batch run updates keep it.
	Paused Pause
	// ResetTo is the run a reset of this one made (its status is then
	// RunReset); ResetFrom and ResetKey, on that new run, name the run
	// reset and the key it was reset to. Set only by ResetRun; CreateRun
	// and Batch creates keep ResetFrom and ResetKey, Batch run updates
	// keep all three.
	ResetTo, ResetFrom, ResetKey string
	CreatedAt                    time.Time
	UpdatedAt                    time.Time
	// Lease state, read-only: filled by Run, Runs and DueRuns, set only by
	// ClaimRuns, RenewLease and ReleaseLease (CreateRun and Batch run
	// updates ignore these fields). LeaseOwner is empty when no worker
	// holds the run; LeaseToken keeps the token of the latest claim (0:
	// never claimed) after the lease is released.
	LeaseOwner  string
	LeaseExpiry int64 // unix ns; 0 when not held
	LeaseToken  int64
	// Attrs are the run's initial search attributes (AttrStore), written
	// with the run by CreateRun, CreateClaimedRun and Batch.Creates
	// (CheckAttrValues); reads leave it nil (RunAttrs reads them).
	Attrs map[string]any
}

// ForCreate returns r as CreateRun stores it: an empty status becomes
// pending, a zero CreatedAt becomes now and a zero UpdatedAt CreatedAt
// (both kept to the nanosecond, without a monotonic reading), and the
// lease fields are cleared. Every backend calls it, so they agree.
func (r Run) ForCreate(now time.Time) Run {
	if r.Status == "" {
		r.Status = RunPending
	}
	r.LeaseOwner, r.LeaseExpiry, r.LeaseToken = "", 0, 0
	r.Paused = Pause{}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.CreatedAt = time.Unix(0, r.CreatedAt.UnixNano())
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	r.UpdatedAt = time.Unix(0, r.UpdatedAt.UnixNano())
	return r
}

// OutcomeStatus is the state of one durable outcome.
type OutcomeStatus string

// Outcome statuses.
const (
	OutcomePending OutcomeStatus = "pending" // op issued, not settled (a timer with its deadline, a promise)
	OutcomeOK      OutcomeStatus = "ok"
	OutcomeError   OutcomeStatus = "error"
)

// Outcome is the record of one durable operation of a run, keyed by its
// lineage key (see package lineage). It holds every field of the
// settlement journal.
type Outcome struct {
	Key       string // lineage key relative to the run, e.g. "t2.1"
	Kind      string // op kind: step, call, sleep, promise, child
	Function  string // step fnName, activity name, workflow name, or the kind
	Status    OutcomeStatus
	Value     []byte // JSON value when ok
	Error     string // error text when error
	Attempts  int    // executions of the body/activity so far
	Seq       int64  // settle sequence (1, 2, ...); 0 while pending
	Waited    bool   // true: waited-for outcome, delivered at an idle point; false: inline
	Idle      int64  // counted idle point of delivery (waited-for only)
	WakeOrder int    // order within that idle point (waited-for only)
	VTime     int64  // unix ns virtual time at settlement
	Deadline  int64  // unix ns; timers only
	// Orphaned: the latest complete execution of the run never reached
	// this key (the code changed, or a step was renamed). Kept, never deleted.
	Orphaned bool
	// Schema is the JSON Schema of a promise's value (package shape), as
	// the guest gave it when it issued the promise; nil for none. A write
	// without one keeps the stored one.
	Schema    []byte
	UpdatedAt time.Time
	// StartedAt and SettledAt are when the op was first issued and when
	// its settlement was recorded, unix ns by the host's wall clock; 0
	// when not known (an op recorded before these were kept, a pending
	// op's SettledAt). They are observability data for the timeline
	// (docs/ui.md): never replayed, never given to the guest. A write
	// keeps the non-zero value stored: a replay that writes the record
	// again does not move them.
	StartedAt int64
	SettledAt int64
}

// IdleKey is the Attempt key of a run's instance drops: the attempt
// numbered N is the idle point where an execution's instance was dropped
// (evicted or suspended) with N settled records in the journal (Start),
// until the execution that replayed it started (End). It is not a
// lineage key, so it never collides with an op.
const IdleKey = "!idle"

// Attempt is one attempt of an op: an execution of a step body under a
// retry policy or timeout, or of an activity call, with its start, end
// and error (unix ns by the host's wall clock; 0 when not known). Like
// Outcome.StartedAt it is observability data, never replayed. A write
// keeps a non-zero Start or End and a non-empty Error stored already.
type Attempt struct {
	Key   string // the op's lineage key, or IdleKey
	N     int    // 1 for the first attempt
	Start int64
	End   int64  // 0 while the attempt runs
	Error string // the attempt's error; empty when it succeeded or runs
}

// RunAttempt is an attempt upsert for one run.
type RunAttempt struct {
	RunID   string
	Attempt Attempt
}

// Batch is a set of writes applied atomically, after every batch committed
// before it.
//
// What is recorded is write-once, and every backend enforces it in the
// transaction that applies the batch (failing it with ErrImmutable):
//   - a settled outcome (status ok or error) keeps its Status, Value,
//     Error, Kind and Function for good. Writing it again with the same
//     ones is allowed and may change Seq (a replay that renumbers the
//     journal), Orphaned, Waited, Idle, WakeOrder, VTime, Deadline,
//     Attempts (never down) and UpdatedAt. A pending outcome written over
//     a settled one is skipped, as before (a late attempt counter).
//   - a completed, canceled or continued run keeps its Status, Result, Error and
//     ModuleHash for good (an update that leaves them as they are is
//     allowed). Its journal is closed: a batch that writes any
//     outcome of it (a new key, a rewrite, a settlement of a pending
//     one, a mark) fails whole with JournalClosedError. The run's status
//     before the batch decides: a batch may write outcomes of a run and
//     end it. So a journal read after its run was seen final never
//     changes, and a reader may keep it (the host's journal cache does). A failed or diverged run may be updated: Host.Resume
//     points it at new code and executes it again, and its settled
//     outcomes stay as they are.
type Batch struct {
	// Creates are runs to insert, each as CreateRun stores it (ForCreate),
	// before the batch's other writes: a run that continues as new creates
	// its successor in the commit that ends it. A run whose id exists
	// already fails the batch with ErrConflict (wrapped, naming the id),
	// and nothing of it is applied. Creates may be of runs other than the
	// fenced one.
	Creates  []Run
	Outcomes []RunOutcome // upserts by (run, key)
	Runs     []Run        // updates of existing runs: every mutable field (ModuleHash, Status, Result, Error, WakeAt) is written
	// Settlements are delivered to other runs (a child's result to its
	// parent); one that exists already for its key is left as it is.
	Settlements []Settlement
	// Tasks are activity tasks to queue (see TaskStore), each inserted
	// unless a task exists for its (run, key) already, whatever its state:
	// a replay that issues the op again queues nothing new. A task whose
	// State is TaskClaimed is stored claimed by Owner from ClaimedAt until
	// Expiry (a claim that took the task as it was queued); any other
	// starts queued, its Owner and lease fields ignored. Heartbeat,
	// Progress and LastError are ignored.
	Tasks []Task
	// Attempts are upserts of op attempts by (run, key, N), with the
	// keep-what-is-known rule of Attempt.
	Attempts []RunAttempt
	// ParentEnded lists the child runs that the batch's run (which ends
	// in it) leaves unended: each gets the cancellation request Reason
	// (as RequestCancel records it: a request made before stays), or with
	// Abandon is marked Abandoned. A child run that has ended is left as
	// it is. They may be runs other than the fenced one.
	ParentEnded []ParentEnd
	// Fence, when set, makes the batch conditional on the lease: Commit
	// checks in the same transaction that run Fence.RunID is still held
	// with Fence.Token by Fence.Owner, and otherwise fails with
	// ErrLeaseLost and applies nothing. Every outcome and run update of a
	// fenced batch must be for Fence.RunID (else the commit fails);
	// Settlements may go to other runs. A fenced batch with no writes
	// still checks the lease. The lease's expiry is not checked: an
	// expired lease no one has claimed since still fences.
	Fence *Lease
	// Attrs are search attribute values to write (RunAttrs), after the
	// batch's Creates: each replaces the run's value of its name.
	Attrs []RunAttrs
	// Release, with Fence, also releases the lease (as ReleaseLease does)
	// in the same transaction: a worker's last commit of a run that ended
	// saves a transaction. Release without Fence fails the commit.
	Release bool
}

// ParentEnd is what a run's end does to one of its child runs
// (Batch.ParentEnded).
type ParentEnd struct {
	RunID   string
	Abandon bool
	Reason  string // the cancellation's reason, when not Abandon
}

// CheckFenceWrites checks the rules of Fence and Release that need no
// store: a fenced batch writes outcomes and run updates of the fenced run
// only, and Release needs a Fence (ErrReleaseUnfenced). Every backend's
// Commit calls it before it checks the lease itself.
func (b *Batch) CheckFenceWrites() error {
	f := b.Fence
	if f == nil {
		if b.Release {
			return ErrReleaseUnfenced
		}
		return nil
	}
	for i := range b.Outcomes {
		if id := b.Outcomes[i].RunID; id != f.RunID {
			return fmt.Errorf("fenced batch for run %s writes an outcome of run %s", f.RunID, id)
		}
	}
	for i := range b.Runs {
		if id := b.Runs[i].ID; id != f.RunID {
			return fmt.Errorf("fenced batch for run %s updates run %s", f.RunID, id)
		}
	}
	for i := range b.Tasks {
		if id := b.Tasks[i].RunID; id != f.RunID {
			return fmt.Errorf("fenced batch for run %s queues a task of run %s", f.RunID, id)
		}
	}
	for i := range b.Attempts {
		if id := b.Attempts[i].RunID; id != f.RunID {
			return fmt.Errorf("fenced batch for run %s writes an attempt of run %s", f.RunID, id)
		}
	}
	for i := range b.Attrs {
		if id := b.Attrs[i].RunID; id != f.RunID {
			return fmt.Errorf("fenced batch for run %s writes attributes of run %s", f.RunID, id)
		}
	}
	return nil
}

// Settlement is an outcome given to a run from outside its execution: an
// external promise settled through the API, or a child run's result for
// its parent. The run's execution delivers it at its next idle point,
// which records the outcome; until then the outcome stays pending.
type Settlement struct {
	RunID     string
	Key       string
	Status    OutcomeStatus // ok or error
	Value     []byte        // JSON when ok
	Error     string        // when error
	Attempts  int           // an activity task's attempts made (0 otherwise)
	CreatedAt time.Time
}

// CancelKey is the journal key of a run's cancellation: the outcome
// recorded at the idle point where the cancellation was delivered. It is
// not a lineage key, so it never collides with an op.
const CancelKey = "!cancel"

// RunOutcome is an outcome upsert for one run.
type RunOutcome struct {
	RunID   string
	Outcome Outcome
}

// RunFilter selects runs for ListRuns, and orders them.
type RunFilter struct {
	Status      RunStatus // empty: any
	Workflow    string    // empty: any
	Module      string    // a module hash; empty: any
	CreatedFrom int64     // unix ns: runs created at or after it; 0: no bound
	CreatedTo   int64     // unix ns: runs created before it; 0: no bound
	Order       RunOrder  // the sort key (RunSortKey); empty: by ID
	Desc        bool      // descending; ties are broken by ID in the same direction
	Limit       int       // 0: a default of 100
	// After is the cursor: the ID of the last run of the previous page;
	// with no Order, runs whose ID sorts after it (before it with Desc).
	// With an Order, After is used only when not empty, with AfterKey,
	// that run's RunSortKey: runs that sort after (AfterKey, After).
	After    string
	AfterKey int64
	// Attrs are conditions on the run's search attributes, all of which
	// must hold; a run without the attribute never matches. A condition
	// the declarations refuse fails Runs with ErrAttrCond
	// (CheckAttrConds). A store that does not record attributes fails
	// Runs with ErrAttrsUnsupported when Attrs is not empty.
	Attrs []AttrCond
	// The conditions of the filter language (internal/runfilter); see
	// store/runselect.go.
	RunSelect
}

// Store is the durable state of skein. Every method is safe for concurrent use.
type Store interface {
	// PutModule stores a module. Storing the same hash again is a no-op
	// that keeps the first record. A non-empty m.Name is pointed at
	// m.Hash (moved from the module it named, if another), and every
	// other name is left as it is: a module may carry several names.
	PutModule(ctx context.Context, m Module) error
	// Module returns a module by hash or, failing that, by name (the
	// module last stored under that name).
	Module(ctx context.Context, hashOrName string) (Module, error)
	// ModuleInfo is Module without the bytes: cheap, for callers that
	// need a module's name, ABI version or workflows.
	ModuleInfo(ctx context.Context, hashOrName string) (Module, error)
	// Modules lists stored modules without their bytes, newest first.
	Modules(ctx context.Context) ([]Module, error)

	// CreateRun inserts r unless a run with r.ID exists. It returns the run
	// as stored and whether it was created by this call.
	CreateRun(ctx context.Context, r Run) (Run, bool, error)
	// CreateClaimedRun is CreateRun that also claims the run it creates
	// for owner until now+ttl (lease token 1, in the lease history), in
	// the same transaction: a run created to be driven at once saves the
	// claim's write. A run that existed already is returned as it is,
	// unclaimed, with created false (ClaimRun it).
	CreateClaimedRun(ctx context.Context, r Run, owner string, now int64, ttl time.Duration) (c ClaimedRun, created bool, err error)
	// Run returns one run.
	Run(ctx context.Context, id string) (Run, error)
	// Runs lists runs ordered by f.Order, then ID (RunFilter).
	Runs(ctx context.Context, f RunFilter) ([]Run, error)
	// DueRuns returns the runs a worker should drive: suspended runs with
	// 0 < WakeAt <= now, with 0 < Deadline <= now and no cancellation
	// requested yet, with an undelivered settlement, or with an
	// undelivered cancellation (Cancel set and no outcome at CancelKey);
	// and runs that are pending or running (to be resumed after a crash);
	// ordered by WakeAt, then ID; up to limit (<= 0: all). A paused
	// run is never due (PauseRun). Its cost must
	// follow the number of due runs, not of suspended ones: workers call
	// it (through ClaimRuns) several times a second.
	DueRuns(ctx context.Context, now int64, limit int) ([]Run, error)

	// Settle records s for the external promise (an outcome of kind
	// "promise") at s.Key of run s.RunID, exactly once. It fails with
	// ErrNotFound when the run has no promise at that key, and with
	// ErrConflict when the promise was settled already.
	Settle(ctx context.Context, s Settlement) error
	// Settlements returns the settlements of a run whose outcome is still
	// pending (not yet delivered to the run's execution), oldest first.
	Settlements(ctx context.Context, runID string) ([]Settlement, error)
	// RequestCancel records a cancellation of a run with its reason (the
	// first reason wins) and returns the run as stored. It fails with
	// ErrNotFound for an unknown run; a terminal run is returned unchanged.
	RequestCancel(ctx context.Context, runID, reason string) (Run, error)
	// PauseRun marks a run paused by by, for reason, at at (unix ns, >
	// 0), and returns the run as stored. A paused run keeps its status;
	// DueRuns, ClaimRuns and ClaimRun skip it (ClaimRun fails with a
	// *PausedError), while settlements and cancellations are stored as
	// usual, to be delivered once it is unpaused. Pausing a paused run
	// keeps the first pause (who, why and since when) and returns the
	// run. An unknown run fails with ErrNotFound, an ended one
	// (Status.Terminal) with ErrEnded, unchanged.
	PauseRun(ctx context.Context, runID, by, reason string, at int64) (Run, error)
	// UnpauseRun clears a run's pause and returns the run as stored; a
	// run that is not paused is returned unchanged. An unknown run fails
	// with ErrNotFound.
	UnpauseRun(ctx context.Context, runID string) (Run, error)

	// Commit applies b atomically and returns once it is durable.
	// Concurrent commits may share one transaction (group commit); a
	// batch that fails (a lost fence, an unknown run) fails alone.
	Commit(ctx context.Context, b Batch) error
	// Outcomes returns every outcome of a run: settled ones in settle
	// order, then pending ones by key.
	Outcomes(ctx context.Context, runID string) ([]Outcome, error)
	// Outcome returns one outcome of a run, or ErrNotFound.
	Outcome(ctx context.Context, runID, key string) (Outcome, error)
	// Attempts returns every attempt of a run (Batch.Attempts), by key,
	// then N. An unknown run has none (no error).
	Attempts(ctx context.Context, runID string) ([]Attempt, error)

	// ClaimRun claims run id for owner whatever its status, if its lease
	// is free or expired (LeaseExpiry <= now), as ClaimRuns claims a due
	// run: a token one greater than the previous one, the expiry now+ttl,
	// a new entry in the lease history. When another lease is live it
	// fails with a *LeaseHeldError (wrapping ErrLeaseHeld) naming it; an
	// unknown run fails with ErrNotFound, a paused one with a
	// *PausedError (wrapping ErrPaused). Host.Drive and Host.Resume
	// claim the run they execute with it.
	ClaimRun(ctx context.Context, id, owner string, now int64, ttl time.Duration) (ClaimedRun, error)
	// ClaimRuns atomically claims for owner up to limit (<= 0: all) of the
	// runs DueRuns(now) would return whose lease is free (no owner) or
	// expired (LeaseExpiry <= now), in DueRuns order. Each claimed run
	// gets owner, a token one greater than its previous one and the expiry
	// now+ttl, and a new entry in its lease history. Concurrent claims,
	// from this process or another sharing the store, never return the
	// same run while its lease is live. The returned runs show the new
	// lease. owner must not be empty and ttl must be positive.
	ClaimRuns(ctx context.Context, owner string, now int64, ttl time.Duration, limit int) ([]ClaimedRun, error)
	// RenewLease sets the expiry of l's run to expiry if l.Token and
	// l.Owner are still the run's current lease (even if it expired and
	// no one claimed the run since); otherwise it fails with ErrLeaseLost.
	RenewLease(ctx context.Context, l Lease, expiry int64) error
	// ReleaseLease gives up l (the run has no owner afterwards, its token
	// is kept) if it is still the run's current lease, and records the
	// release in the history; otherwise it fails with ErrLeaseLost and
	// changes nothing.
	ReleaseLease(ctx context.Context, l Lease) error
	// LeaseHistory returns every claim of a run, in claim (token) order.
	// An unknown run has none (no error).
	LeaseHistory(ctx context.Context, runID string) ([]LeaseRecord, error)

	// ResetRun applies r in one transaction (see Reset): it creates the
	// new run with its journal and marks r.From reset, releasing its
	// lease, and returns the new run as stored. An unknown From fails
	// with ErrNotFound; one that continued or was reset already with a
	// ResetRefusedError; a new run id that exists with ErrConflict. Nothing
	// is applied when it fails.
	ResetRun(ctx context.Context, r Reset) (Run, error)

	TaskStore
	ScheduleStore
	PruneStore
	BatchJobStore
	AttrStore
	NamespaceStore
	KeyStore

	// Close flushes pending writes and releases resources.
	Close() error
}

// One is the result of a backend's read of one record (Task, Outcome)
// from its list of matching records: the one record, or ErrNotFound for
// none, wrapped in what.
func One[T any](xs []T, err error, what string) (T, error) {
	var zero T
	switch {
	case err != nil:
		return zero, err
	case len(xs) == 0:
		return zero, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return xs[0], nil
}

// CheckClaim refuses the arguments of a claim (ClaimRun, ClaimRuns,
// CreateClaimedRun) without an owner or with a ttl that is not positive.
func CheckClaim(owner string, ttl time.Duration) error {
	if owner == "" || ttl <= 0 {
		return fmt.Errorf("need an owner and a positive ttl (got %q, %v)", owner, ttl)
	}
	return CheckText("lease owner", owner)
}
