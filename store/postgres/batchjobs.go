package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Batch jobs (store.BatchJobStore): rowscan's statements, shared with
// store/sqlite, in $N markers.

var (
	batchInsert = rowscan.Dollars(rowscan.BatchInsert)
	batchSelect = rowscan.Dollars(rowscan.BatchSelect)
	batchList   = rowscan.Dollars(rowscan.BatchList)
	batchCancel = rowscan.Dollars(rowscan.BatchCancel)
	batchClaim  = rowscan.Dollars(rowscan.BatchClaim)
	batchSave   = rowscan.Dollars(rowscan.BatchSave)
)

// CreateBatchJob stores a new job.
func (d *DB) CreateBatchJob(ctx context.Context, j store.BatchJob) (store.BatchJob, error) {
	if err := j.Check(); err != nil {
		return store.BatchJob{}, fmt.Errorf("postgres store: create batch: %w", err)
	}
	j.CreatedAt = time.Unix(0, nanos(j.CreatedAt, time.Now()))
	j.Status, j.LeaseOwner, j.LeaseExpiry, j.LeaseToken = store.BatchRunning, "", 0, 0
	doc, err := rowscan.BatchDoc(j)
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("postgres store: create batch: %w", err)
	}
	if err := d.insertNamed(ctx, batchInsert, j.ID, j.CreatedAt.UnixNano(), doc); err != nil {
		return store.BatchJob{}, fmt.Errorf("postgres store: create batch %s: %w", j.ID, err)
	}
	return j, nil
}

// BatchJob returns one job.
func (d *DB) BatchJob(ctx context.Context, id string) (store.BatchJob, error) {
	if err := d.check(ctx); err != nil {
		return store.BatchJob{}, fmt.Errorf("postgres store: batch %s: %w", id, err)
	}
	if !store.ValidText(id) {
		return store.BatchJob{}, fmt.Errorf("postgres store: batch %s: %w", store.CleanText(id), store.ErrNotFound)
	}
	j, err := rowscan.BatchJob(d.pool.QueryRow(ctx, batchSelect, id), pgx.ErrNoRows)
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("postgres store: batch %s: %w", id, d.wrapClosed(err))
	}
	return j, nil
}

// BatchJobs lists jobs newest first.
func (d *DB) BatchJobs(ctx context.Context, limit int) ([]store.BatchJob, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: list batches: %w", err)
	}
	if limit <= 0 {
		limit = defaultRunsLimit
	}
	rows, err := d.pool.Query(ctx, batchList, int64(limit))
	if err != nil {
		return nil, fmt.Errorf("postgres store: list batches: %w", d.wrapClosed(err))
	}
	js, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.BatchJob, error) { return rowscan.BatchJob(r, pgx.ErrNoRows) })
	if err != nil {
		return nil, fmt.Errorf("postgres store: list batches: %w", d.wrapClosed(err))
	}
	return js, nil
}

// CancelBatchJob records a job's cancellation.
func (d *DB) CancelBatchJob(ctx context.Context, id, reason string) (store.BatchJob, error) {
	if reason == "" {
		reason = "canceled"
	}
	if err := store.CheckText("batch cancel reason", reason); err != nil {
		return store.BatchJob{}, fmt.Errorf("postgres store: %w", err)
	}
	if !store.ValidText(id) {
		return store.BatchJob{}, fmt.Errorf("postgres store: batch %s: %w", store.CleanText(id), store.ErrNotFound)
	}
	err := d.inStmt(ctx, func() error {
		_, err := d.pool.Exec(ctx, batchCancel, id, reason)
		return err
	})
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("postgres store: cancel batch %s: %w", id, err)
	}
	return d.BatchJob(ctx, id)
}

// ClaimBatchJob claims the oldest running job whose lease is free or
// expired.
func (d *DB) ClaimBatchJob(ctx context.Context, owner string, now int64, ttl time.Duration) (store.BatchJob, bool, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return store.BatchJob{}, false, fmt.Errorf("postgres store: claim a batch: %w", err)
	}
	var j store.BatchJob
	err := d.inStmt(ctx, func() error {
		var err error
		j, err = rowscan.BatchJob(d.pool.QueryRow(ctx, batchClaim, now, owner, now+int64(ttl)), pgx.ErrNoRows)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.BatchJob{}, false, nil
	case err != nil:
		return store.BatchJob{}, false, fmt.Errorf("postgres store: claim a batch: %w", err)
	}
	return j, true, nil
}

// SaveBatchJob writes a job's progress under its lease.
func (d *DB) SaveBatchJob(ctx context.Context, j store.BatchJob, expiry int64) (store.BatchJob, error) {
	if err := j.Check(); err != nil {
		return store.BatchJob{}, fmt.Errorf("postgres store: save batch: %w", err)
	}
	doc, err := rowscan.BatchDoc(j)
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("postgres store: save batch: %w", err)
	}
	var saved store.BatchJob
	err = d.inStmt(ctx, func() error {
		var err error
		saved, err = rowscan.BatchJob(d.pool.QueryRow(ctx, batchSave, j.ID, j.LeaseOwner, j.LeaseToken, string(j.Status), doc, expiry), pgx.ErrNoRows)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.BatchJob{}, fmt.Errorf("postgres store: save batch %s: lease %d of %q: %w", j.ID, j.LeaseToken, j.LeaseOwner, store.ErrLeaseLost)
	case err != nil:
		return store.BatchJob{}, fmt.Errorf("postgres store: save batch %s: %w", j.ID, err)
	}
	return saved, nil
}
