// Package store defines the durable state of skein behind one interface:
// modules, runs and the outcomes of their durable operations.
//
// Implementations live in sub-packages (store/sqlite, later store/postgres)
// and must all pass the shared suite in store/storetest.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned (wrapped) when a module, run or promise does not
// exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned (wrapped) when a write contradicts what is
// stored: a promise settled a second time.
var ErrConflict = errors.New("conflict")

// Module is a deployed workflow module, addressed by the sha256 of its bytes.
type Module struct {
	Hash       string   // hex sha256 of Bytes
	Name       string   // user-given name; may be empty
	Bytes      []byte   // the .wasm file
	ABIVersion int      // ABI version the module speaks
	Workflows  []string // registered workflow names, sorted
	CreatedAt  time.Time
}

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
)

// Terminal reports whether the status is final.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunCanceled
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
	Cancel    string
	CreatedAt time.Time
	UpdatedAt time.Time
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
	Orphaned  bool
	UpdatedAt time.Time
}

// Batch is a set of writes applied atomically, after every batch committed
// before it.
type Batch struct {
	Outcomes []RunOutcome // upserts by (run, key)
	Runs     []Run        // updates of existing runs: every mutable field (ModuleHash, Status, Result, Error, WakeAt) is written
	// Settlements are delivered to other runs (a child's result to its
	// parent); one that exists already for its key is left as it is.
	Settlements []Settlement
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

// RunFilter selects runs for ListRuns.
type RunFilter struct {
	Status RunStatus // empty: any
	Limit  int       // 0: a default of 100
	After  string    // cursor: return runs whose ID sorts after this
}

// Store is the durable state of skein. Every method is safe for concurrent use.
type Store interface {
	// PutModule stores a module. Storing the same hash again is a no-op
	// that keeps the first record (the name is updated if given).
	PutModule(ctx context.Context, m Module) error
	// Module returns a module by hash or, failing that, by name (the most
	// recently stored module of that name).
	Module(ctx context.Context, hashOrName string) (Module, error)
	// Modules lists stored modules without their bytes, newest first.
	Modules(ctx context.Context) ([]Module, error)

	// CreateRun inserts r unless a run with r.ID exists. It returns the run
	// as stored and whether it was created by this call.
	CreateRun(ctx context.Context, r Run) (Run, bool, error)
	// Run returns one run.
	Run(ctx context.Context, id string) (Run, error)
	// Runs lists runs ordered by ID.
	Runs(ctx context.Context, f RunFilter) ([]Run, error)
	// DueRuns returns the runs a worker should drive: suspended runs with
	// 0 < WakeAt <= now, with 0 < Deadline <= now and no cancellation
	// requested yet, with an undelivered
	// settlement, or with an undelivered cancellation (Cancel set and no
	// outcome at CancelKey); and runs that are pending or running (to be
	// resumed after a crash); up to limit (<= 0: all).
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

	// Commit applies b atomically and returns once it is durable.
	// Concurrent commits may share one transaction (group commit).
	Commit(ctx context.Context, b Batch) error
	// Outcomes returns every outcome of a run: settled ones in settle
	// order, then pending ones by key.
	Outcomes(ctx context.Context, runID string) ([]Outcome, error)

	// Close flushes pending writes and releases resources.
	Close() error
}
