package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// The batch jobs (store.BatchJobStore), by id; nil until the first.

// CreateBatchJob stores a new job.
func (s *Store) CreateBatchJob(ctx context.Context, j store.BatchJob) (store.BatchJob, error) {
	if err := j.Check(); err != nil {
		return store.BatchJob{}, fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.BatchJob{}, fmt.Errorf("memory store: create batch %s: %w", j.ID, err)
	}
	if _, ok := s.batches[j.ID]; ok {
		return store.BatchJob{}, fmt.Errorf("memory store: batch %s exists: %w", j.ID, store.ErrConflict)
	}
	if s.batches == nil {
		s.batches = map[string]store.BatchJob{}
	}
	j.Status = store.BatchRunning
	j.LeaseOwner, j.LeaseExpiry, j.LeaseToken = "", 0, 0
	j.CreatedAt = time.Unix(0, orNow(j.CreatedAt, time.Now()).UnixNano())
	s.batches[j.ID] = copyBatch(j)
	return copyBatch(j), nil
}

func copyBatch(j store.BatchJob) store.BatchJob {
	j.Args = slices.Clone(j.Args)
	j.Errors = slices.Clone(j.Errors)
	return j
}

// BatchJob returns one job.
func (s *Store) BatchJob(ctx context.Context, id string) (store.BatchJob, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return store.BatchJob{}, fmt.Errorf("memory store: batch %s: %w", id, err)
	}
	j, ok := s.batches[id]
	if !ok {
		return store.BatchJob{}, fmt.Errorf("memory store: batch %s: %w", id, store.ErrNotFound)
	}
	return copyBatch(j), nil
}

// BatchJobs lists jobs newest first.
func (s *Store) BatchJobs(ctx context.Context, limit int) ([]store.BatchJob, error) {
	if limit <= 0 {
		limit = defaultRunsLimit
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: list batches: %w", err)
	}
	js := make([]store.BatchJob, 0, len(s.batches))
	for _, j := range s.batches {
		js = append(js, copyBatch(j))
	}
	slices.SortFunc(js, func(a, b store.BatchJob) int {
		return -cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return js[:min(limit, len(js))], nil
}

// CancelBatchJob records a job's cancellation.
func (s *Store) CancelBatchJob(ctx context.Context, id, reason string) (store.BatchJob, error) {
	if reason == "" {
		reason = "canceled"
	}
	if err := store.CheckText("batch cancel reason", reason); err != nil {
		return store.BatchJob{}, fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.BatchJob{}, fmt.Errorf("memory store: cancel batch %s: %w", id, err)
	}
	j, ok := s.batches[id]
	if !ok {
		return store.BatchJob{}, fmt.Errorf("memory store: batch %s: %w", id, store.ErrNotFound)
	}
	if j.Status == store.BatchRunning && j.Cancel == "" {
		j.Cancel = reason
		s.batches[id] = j
	}
	return copyBatch(j), nil
}

// ClaimBatchJob claims the first running job whose lease is free or
// expired.
func (s *Store) ClaimBatchJob(ctx context.Context, owner string, now int64, ttl time.Duration) (store.BatchJob, bool, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return store.BatchJob{}, false, fmt.Errorf("memory store: claim a batch: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.BatchJob{}, false, fmt.Errorf("memory store: claim a batch: %w", err)
	}
	var first *store.BatchJob
	for id := range s.batches {
		j := s.batches[id]
		if j.Status != store.BatchRunning || j.LeaseOwner != "" && j.LeaseExpiry > now {
			continue
		}
		if first == nil || cmp.Or(j.CreatedAt.Compare(first.CreatedAt), strings.Compare(j.ID, first.ID)) < 0 {
			first = &j
		}
	}
	if first == nil {
		return store.BatchJob{}, false, nil
	}
	j := *first
	j.LeaseOwner, j.LeaseExpiry, j.LeaseToken = owner, now+int64(ttl), j.LeaseToken+1
	s.batches[j.ID] = j
	return copyBatch(j), true, nil
}

// SaveBatchJob writes a job's progress under its lease.
func (s *Store) SaveBatchJob(ctx context.Context, j store.BatchJob, expiry int64) (store.BatchJob, error) {
	if err := j.Check(); err != nil {
		return store.BatchJob{}, fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.BatchJob{}, fmt.Errorf("memory store: save batch %s: %w", j.ID, err)
	}
	cur, ok := s.batches[j.ID]
	if !ok {
		return store.BatchJob{}, fmt.Errorf("memory store: batch %s: %w", j.ID, store.ErrNotFound)
	}
	if cur.LeaseOwner != j.LeaseOwner || cur.LeaseToken != j.LeaseToken || cur.LeaseOwner == "" {
		return store.BatchJob{}, fmt.Errorf("memory store: batch %s lease %d of %q: %w", j.ID, j.LeaseToken, j.LeaseOwner, store.ErrLeaseLost)
	}
	cur.Status, cur.Cursor, cur.Selected, cur.Done, cur.Failed = j.Status, j.Cursor, j.Selected, j.Done, j.Failed
	cur.Errors, cur.StartedAt, cur.ActedAt, cur.EndedAt = slices.Clone(j.Errors), j.StartedAt, j.ActedAt, j.EndedAt
	cur.LeaseExpiry = expiry
	if cur.Status != store.BatchRunning {
		cur.LeaseOwner, cur.LeaseExpiry = "", 0
	}
	s.batches[j.ID] = cur
	return copyBatch(cur), nil
}
