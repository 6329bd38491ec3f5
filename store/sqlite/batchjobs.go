package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Batch jobs (store.BatchJobStore): the statements are rowscan's, shared
// with store/postgres (schema migration "batch jobs").

// CreateBatchJob stores a new job.
func (d *DB) CreateBatchJob(ctx context.Context, j store.BatchJob) (store.BatchJob, error) {
	if err := j.Check(); err != nil {
		return store.BatchJob{}, fmt.Errorf("sqlite store: create batch: %w", err)
	}
	j.CreatedAt = time.Unix(0, nanos(j.CreatedAt, time.Now()))
	j.Status, j.LeaseOwner, j.LeaseExpiry, j.LeaseToken = store.BatchRunning, "", 0, 0
	doc, err := rowscan.BatchDoc(j)
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("sqlite store: create batch: %w", err)
	}
	err = d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		res, err := w.tx.ExecContext(w.ctx, rowscan.BatchInsert, j.ID, j.CreatedAt.UnixNano(), doc)
		return inserted(res, err)
	}})
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("sqlite store: create batch %s: %w", j.ID, err)
	}
	return j, nil
}

// BatchJob returns one job.
func (d *DB) BatchJob(ctx context.Context, id string) (store.BatchJob, error) {
	j, err := rowscan.BatchJob(d.rdb.QueryRowContext(ctx, rowscan.BatchSelect, id), sql.ErrNoRows)
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("sqlite store: batch %s: %w", id, err)
	}
	return j, nil
}

// BatchJobs lists jobs newest first.
func (d *DB) BatchJobs(ctx context.Context, limit int) ([]store.BatchJob, error) {
	if limit <= 0 {
		limit = defaultRunsLimit
	}
	rows, err := d.rdb.QueryContext(ctx, rowscan.BatchList, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: list batches: %w", err)
	}
	defer rows.Close()
	var js []store.BatchJob
	for rows.Next() {
		j, err := rowscan.BatchJob(rows, sql.ErrNoRows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: list batches: %w", err)
		}
		js = append(js, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: list batches: %w", err)
	}
	return js, nil
}

// CancelBatchJob records a job's cancellation.
func (d *DB) CancelBatchJob(ctx context.Context, id, reason string) (store.BatchJob, error) {
	if reason == "" {
		reason = "canceled"
	}
	if err := store.CheckText("batch cancel reason", reason); err != nil {
		return store.BatchJob{}, fmt.Errorf("sqlite store: %w", err)
	}
	var j store.BatchJob
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		if _, err := w.tx.ExecContext(w.ctx, rowscan.BatchCancel, id, reason); err != nil {
			return err
		}
		var err error
		j, err = rowscan.BatchJob(w.tx.QueryRowContext(w.ctx, rowscan.BatchSelect, id), sql.ErrNoRows)
		return err
	}})
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("sqlite store: cancel batch %s: %w", id, err)
	}
	return j, nil
}

// ClaimBatchJob claims the oldest running job whose lease is free or
// expired.
func (d *DB) ClaimBatchJob(ctx context.Context, owner string, now int64, ttl time.Duration) (store.BatchJob, bool, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return store.BatchJob{}, false, fmt.Errorf("sqlite store: claim a batch: %w", err)
	}
	var j store.BatchJob
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var err error
		j, err = rowscan.BatchJob(w.tx.QueryRowContext(w.ctx, rowscan.BatchClaim, now, owner, now+int64(ttl)), sql.ErrNoRows)
		return err
	}})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.BatchJob{}, false, nil
	case err != nil:
		return store.BatchJob{}, false, fmt.Errorf("sqlite store: claim a batch: %w", err)
	}
	return j, true, nil
}

// SaveBatchJob writes a job's progress under its lease.
func (d *DB) SaveBatchJob(ctx context.Context, j store.BatchJob, expiry int64) (store.BatchJob, error) {
	if err := j.Check(); err != nil {
		return store.BatchJob{}, fmt.Errorf("sqlite store: save batch: %w", err)
	}
	doc, err := rowscan.BatchDoc(j)
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("sqlite store: save batch: %w", err)
	}
	var saved store.BatchJob
	err = d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var err error
		saved, err = rowscan.BatchJob(w.tx.QueryRowContext(w.ctx, rowscan.BatchSave, j.ID, j.LeaseOwner, j.LeaseToken,
			string(j.Status), doc, expiry), sql.ErrNoRows)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("lease %d of %q: %w", j.LeaseToken, j.LeaseOwner, store.ErrLeaseLost)
		}
		return err
	}})
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("sqlite store: save batch %s: %w", j.ID, err)
	}
	return saved, nil
}
