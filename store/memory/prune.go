package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/skeinrun/skein/store"
)

// PruneRuns deletes up to limit runs that may be pruned at before. See
// store.PruneStore.
func (s *Store) PruneRuns(ctx context.Context, ns string, before int64, limit int, dryRun bool) (store.PruneResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.PruneResult{}, fmt.Errorf("memory store: prune runs: %w", err)
	}
	chains := map[string][]string{} // chain root: its runs, by id
	live := map[string]bool{}       // the runs with a child that has not ended
	for _, id := range s.ids {
		r := &s.runs[id].run
		root := store.ChainRoot(id)
		chains[root] = append(chains[root], id)
		if r.Parent != "" && !r.Status.Terminal() {
			live[r.Parent] = true
		}
	}
	slots := s.slotRuns()
	mayGo := func(root string) bool {
		if slots[root] != "" {
			return false
		}
		for _, id := range chains[root] {
			r := &s.runs[id].run
			if !r.Status.Terminal() || r.UpdatedAt.UnixNano() >= before || live[id] {
				return false
			}
			if p := s.runs[r.Parent]; r.Parent != "" && p != nil && !p.run.Status.Terminal() {
				return false
			}
		}
		return true
	}
	var cands []*store.Run
	for _, st := range store.TerminalStatuses() {
		var of []*store.Run
		for _, rec := range s.runs {
			if r := &rec.run; r.Status == st && r.UpdatedAt.UnixNano() < before && (ns == "" || store.NamespaceOf(r.ID) == ns) && mayGo(store.ChainRoot(r.ID)) {
				of = append(of, r)
			}
		}
		slices.SortFunc(of, func(a, b *store.Run) int {
			return cmpEnd(a, b)
		})
		cands = append(cands, of...)
	}
	if limit > 0 && len(cands) > limit {
		cands = cands[:limit]
	}
	units := make([][]string, 0, len(cands))
	seen := map[string]bool{}
	for _, r := range cands {
		if root := store.ChainRoot(r.ID); !seen[root] {
			seen[root] = true
			units = append(units, chains[root])
		}
	}
	res := store.PlanPrune(len(cands), limit, units)
	if !dryRun {
		gone := make(map[string]bool, len(res.IDs))
		for _, id := range res.IDs {
			gone[id] = true
		}
		s.deleteRuns(func(id string) bool { return gone[id] })
	}
	return res, nil
}

// cmpEnd orders runs by end time (UpdatedAt), then ID.
func cmpEnd(a, b *store.Run) int {
	if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
		return c
	}
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}

// DeleteRun deletes one ended run that nothing needs. See
// store.PruneStore.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory store: delete run %s: %w", id, err)
	}
	rec := s.runs[id]
	if rec == nil {
		return fmt.Errorf("memory store: delete run %s: %w", id, store.ErrNotFound)
	}
	var rel store.Relatives
	if p := s.runs[rec.run.Parent]; rec.run.Parent != "" && p != nil {
		parent := p.run
		rel.Parent = &parent
	}
	root := store.ChainRoot(id)
	var chain []store.Run
	for _, cid := range s.ids {
		r := &s.runs[cid].run
		if r.Parent == id && !r.Status.Terminal() && rel.LiveChild == "" {
			rel.LiveChild = cid
		}
		if store.ChainRoot(cid) == root {
			chain = append(chain, *r)
		}
	}
	rel.ChainEnd = store.ChainEnd(chain)
	rel.SlotOf = s.slotRuns()[root]
	if err := store.KeepReason(rec.run, rel); err != nil {
		return fmt.Errorf("memory store: delete run: %w", err)
	}
	s.deleteRuns(func(rid string) bool { return rid == id })
	return nil
}

// slotRuns is store.SlotRuns of the stored schedules. The caller holds
// mu.
func (s *Store) slotRuns() map[string]string {
	scheds := make([]store.Schedule, 0, len(s.sched.schedules))
	for _, sc := range s.sched.schedules {
		scheds = append(scheds, sc)
	}
	return store.SlotRuns(scheds)
}
