package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skeinrun/skein/store"
)

// attemptID identifies an attempt within a run.
type attemptID struct {
	key string
	n   int
}

// upsertAttempt stores a, keeping a non-zero Start or End and a non-empty
// Error stored already (see store.Attempt).
func (rec *runRec) upsertAttempt(a store.Attempt) {
	if rec.attempts == nil {
		rec.attempts = make(map[attemptID]store.Attempt)
	}
	id := attemptID{a.Key, a.N}
	if old, ok := rec.attempts[id]; ok {
		a.Start = cmp.Or(old.Start, a.Start)
		a.End = cmp.Or(old.End, a.End)
		a.Error = cmp.Or(old.Error, a.Error)
	}
	rec.attempts[id] = a
}

// Attempts returns every attempt of a run by key, then N. An unknown run
// has none (no error).
func (s *Store) Attempts(ctx context.Context, runID string) ([]store.Attempt, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: attempts of %s: %w", runID, err)
	}
	rec := s.runs[runID]
	if rec == nil || len(rec.attempts) == 0 {
		return nil, nil
	}
	out := make([]store.Attempt, 0, len(rec.attempts))
	for _, a := range rec.attempts {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b store.Attempt) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.N, b.N))
	})
	return out, nil
}
