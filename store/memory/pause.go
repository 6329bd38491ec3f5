package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// PauseRun marks a run paused unless it is already (the first pause
// stays) or has ended. See store.Store.
func (s *Store) PauseRun(ctx context.Context, runID, by, reason string, at int64) (store.Run, error) {
	if err := store.CheckPause(by, reason, at); err != nil {
		return store.Run{}, fmt.Errorf("memory store: pause %s: %w", runID, err)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.pauseRec(ctx, "pause", runID)
	if err != nil {
		return store.Run{}, err
	}
	r := &rec.run
	switch {
	case r.Status.Terminal():
		return store.Run{}, fmt.Errorf("memory store: pause: %w", store.PauseEnded(*r))
	case !r.IsPaused():
		r.Paused = store.Pause{By: by, Reason: reason, At: at}
		r.UpdatedAt = orNow(time.Time{}, now)
	}
	return copyRun(*r), nil
}

// UnpauseRun clears a run's pause. See store.Store.
func (s *Store) UnpauseRun(ctx context.Context, runID string) (store.Run, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.pauseRec(ctx, "unpause", runID)
	if err != nil {
		return store.Run{}, err
	}
	if r := &rec.run; r.IsPaused() {
		r.Paused = store.Pause{}
		r.UpdatedAt = orNow(time.Time{}, now)
	}
	return copyRun(rec.run), nil
}

// pauseRec returns the record of run id for PauseRun or UnpauseRun
// (what). The caller holds mu.
func (s *Store) pauseRec(ctx context.Context, what, id string) (*runRec, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: %s %s: %w", what, id, err)
	}
	rec := s.runs[id]
	if rec == nil {
		return nil, fmt.Errorf("memory store: %s %s: %w", what, id, store.ErrNotFound)
	}
	return rec, nil
}
