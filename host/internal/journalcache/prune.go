package journalcache

import (
	"context"

	"github.com/skeinrun/skein/store"
)

// PruneRuns forgets the journals of the runs it deleted: a run started
// later under the same id has a journal of its own.
func (s *Store) PruneRuns(ctx context.Context, ns string, before int64, limit int, dryRun bool) (store.PruneResult, error) {
	res, err := s.Store.PruneRuns(ctx, ns, before, limit, dryRun)
	if err == nil && !dryRun {
		s.c.forget(res.IDs...)
	}
	return res, err
}

// DeleteRun forgets the journal of the run it deleted.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	err := s.Store.DeleteRun(ctx, id)
	if err == nil {
		s.c.forget(id)
	}
	return err
}
