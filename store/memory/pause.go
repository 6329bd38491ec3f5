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
	return s.setPause(ctx, "pause", runID, store.Pausing(by, reason, at))
}

// UnpauseRun clears a run's pause. See store.Store.
func (s *Store) UnpauseRun(ctx context.Context, runID string) (store.Run, error) {
	return s.setPause(ctx, "unpause", runID, store.Unpausing)
}

// setPause writes the pause of run id if decide says so (what: pause or
// unpause, for errors) and returns the run as stored after.
func (s *Store) setPause(ctx context.Context, what, id string, decide store.SetPause) (store.Run, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Run{}, fmt.Errorf("memory store: %s %s: %w", what, id, err)
	}
	rec := s.runs[id]
	if rec == nil {
		return store.Run{}, fmt.Errorf("memory store: %s %s: %w", what, id, store.ErrNotFound)
	}
	p, write, err := decide(rec.run)
	if err != nil {
		return store.Run{}, fmt.Errorf("memory store: %s: %w", what, err)
	}
	if write {
		rec.run.Paused, rec.run.UpdatedAt = p, orNow(time.Time{}, now)
	}
	return copyRun(rec.run), nil
}
