package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// ResetRun creates the new run of r and marks r.From reset, at once. See
// store.Store.
func (s *Store) ResetRun(ctx context.Context, r store.Reset) (store.Run, error) {
	if err := r.Check(); err != nil {
		return store.Run{}, fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Run{}, fmt.Errorf("memory store: reset %s: %w", r.From, err)
	}
	rec := s.runs[r.From]
	if rec == nil {
		return store.Run{}, fmt.Errorf("memory store: reset %s: %w", r.From, store.ErrNotFound)
	}
	if !rec.run.Status.CanReset() {
		return store.Run{}, fmt.Errorf("memory store: %w", store.ResetRefusedError(rec.run))
	}
	if err := s.commit(&r.Batch); err != nil {
		return store.Run{}, fmt.Errorf("memory store: reset %s: %w", r.From, err)
	}
	now := time.Now().Round(0)
	if rec.run.LeaseOwner != "" {
		s.release(rec, now.UnixNano())
	}
	id := r.Batch.Creates[0].ID
	rec.run.Status, rec.run.ResetTo, rec.run.UpdatedAt = store.RunReset, id, now
	return copyRun(s.runs[id].run), nil
}
