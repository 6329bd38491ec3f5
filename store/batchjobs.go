package store

import (
	"context"
	"fmt"
	"time"
)

// Batch jobs: one action (cancel, ...) applied to every run a filter
// selects, as a durable job a worker drives by lease (host/batch.go).
// The store keeps the job, its cursor and its progress; the host walks
// the runs.

// BatchJobStatus is the state of a batch job.
type BatchJobStatus string

// Batch job statuses. Only a running job is claimed by workers.
const (
	BatchRunning  BatchJobStatus = "running"
	BatchDone     BatchJobStatus = "done"     // every selected run was acted on (some may have failed)
	BatchCanceled BatchJobStatus = "canceled" // stopped by CancelBatchJob; the runs acted on before stay so
	// BatchFailed: the job could not go on: its action is unknown to the
	// worker, or the store refuses its filter; Errors says why (an entry
	// without a run).
	BatchFailed BatchJobStatus = "failed"
)

// MaxBatchErrors bounds BatchJob.Errors: the first errors are kept,
// Failed counts them all.
const MaxBatchErrors = 100

// BatchError is the error of the action on one run.
type BatchError struct {
	RunID string `json:"run"`
	Error string `json:"error"`
}

// BatchJob is a stored batch job.
type BatchJob struct {
	ID     string
	Where  string // the filter as given
	Filter string // the filter in its canonical form (runfilter.Format): absolute times, module hashes
	Action string
	Args   []byte  // JSON; the action's arguments
	Rate   float64 // runs acted on per second, at most
	// Before bounds the selection: only runs created before it (unix ns,
	// the job's creation) are acted on, so runs started since, and runs
	// the action itself creates, are never reached.
	Before int64
	Status BatchJobStatus
	Cancel string // the reason of CancelBatchJob; empty until then
	// Cursor is the id of the last run the job acted on (runs are walked
	// by id); empty before the first.
	Cursor   string
	Selected int64 // runs the walk found selected so far
	Done     int64 // runs the action succeeded on
	Failed   int64 // runs the action failed on
	Errors   []BatchError
	// StartedAt and ActedAt are when the action was first and last
	// applied (unix ns; 0 before); EndedAt when the job ended.
	StartedAt int64
	ActedAt   int64
	EndedAt   int64
	CreatedAt time.Time
	// Lease state, read-only like Run's: set by ClaimBatchJob and
	// SaveBatchJob.
	LeaseOwner  string
	LeaseExpiry int64
	LeaseToken  int64
}

// BatchJobStore holds batch jobs. It is part of Store.
type BatchJobStore interface {
	// CreateBatchJob stores a new job (status running, no lease; a zero
	// CreatedAt is now). An existing id fails with ErrConflict.
	CreateBatchJob(ctx context.Context, j BatchJob) (BatchJob, error)
	// BatchJob returns one job, or ErrNotFound.
	BatchJob(ctx context.Context, id string) (BatchJob, error)
	// BatchJobs lists up to limit jobs (<= 0: 100), newest first
	// (CreatedAt, then id, descending).
	BatchJobs(ctx context.Context, limit int) ([]BatchJob, error)
	// CancelBatchJob records the cancellation of a job (the first reason
	// wins; an empty reason is "canceled") and returns it as stored; the
	// worker that drives it ends it at its next save. A job that ended
	// is returned unchanged. An unknown id is ErrNotFound.
	CancelBatchJob(ctx context.Context, id, reason string) (BatchJob, error)
	// ClaimBatchJob claims for owner, until now+ttl, the running job
	// created first whose lease is free or expired (LeaseExpiry <= now),
	// with a token one greater than its previous one; ok is false when
	// there is none.
	ClaimBatchJob(ctx context.Context, owner string, now int64, ttl time.Duration) (j BatchJob, ok bool, err error)
	// SaveBatchJob writes j's progress (Status, Cursor, Selected, Done,
	// Failed, Errors, StartedAt, ActedAt, EndedAt) if j's lease (owner
	// and token) is still the job's, and sets the lease's expiry to
	// expiry; a job that ends (a status other than running) releases
	// it. Otherwise it fails with ErrLeaseLost and writes nothing. It
	// returns the job as stored, with Cancel.
	SaveBatchJob(ctx context.Context, j BatchJob, expiry int64) (BatchJob, error)
}

// Check refuses a job a store cannot keep: no id, texts that are not
// valid (store/text.go), more errors than MaxBatchErrors.
func (j *BatchJob) Check() error {
	if j.ID == "" {
		return fmt.Errorf("batch job without an id")
	}
	if len(j.Errors) > MaxBatchErrors {
		return fmt.Errorf("batch job %s: %d errors, more than %d", j.ID, len(j.Errors), MaxBatchErrors)
	}
	pairs := []string{"batch id", j.ID, "batch filter", j.Where, "batch filter", j.Filter, "batch action", j.Action,
		"batch cursor", j.Cursor, "batch cancel reason", j.Cancel}
	for _, e := range j.Errors {
		pairs = append(pairs, "batch error run", e.RunID, "batch error", e.Error)
	}
	return checkTexts("", pairs...)
}
