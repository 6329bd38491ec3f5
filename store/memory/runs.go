package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skeinrun/skein/store"
)

// The reads of runs: one by id, a filtered and ordered page, and the
// runs due for a worker.

// Run returns the run with the given id, or store.ErrNotFound (wrapped).
func (s *Store) Run(ctx context.Context, id string) (store.Run, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return store.Run{}, fmt.Errorf("memory store: run %s: %w", id, err)
	}
	rec := s.runs[id]
	if rec == nil {
		return store.Run{}, fmt.Errorf("memory store: run %s: %w", id, store.ErrNotFound)
	}
	return copyRun(rec.run), nil
}

// Runs lists runs filtered and ordered by f. By ID, a page starts with a
// binary search for f.After; with f.Status set, it scans runs of other
// statuses too. The other orders sort every run the filter selects.
func (s *Store) Runs(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = defaultRunsLimit
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: list runs: %w", err)
	}
	if err := store.CheckAttrConds(s.declList(), f.Attrs); err != nil {
		return nil, fmt.Errorf("memory store: list runs: %w", err)
	}
	if f.Order != store.OrderID || f.Desc {
		return s.sortedRuns(f, limit), nil
	}
	i, found := slices.BinarySearch(s.ids, f.After)
	if found {
		i++
	}
	var rs []store.Run
	for _, id := range s.ids[i:] {
		if len(rs) == limit {
			break
		}
		if rec := s.runs[id]; selects(f, rec) {
			r := &rec.run
			rs = append(rs, copyRun(*r))
		}
	}
	return rs, nil
}

// selects reports whether r passes f's filters (not its cursor).
func selects(f store.RunFilter, rec *runRec) bool {
	r := &rec.run
	for _, c := range f.Attrs {
		v, ok := rec.attrs[c.Name]
		if !ok || !store.AttrMatch(v, c) {
			return false
		}
	}
	created := r.CreatedAt.UnixNano()
	return (f.Status == "" || r.Status == f.Status) && (f.Workflow == "" || r.Workflow == f.Workflow) &&
		(f.Module == "" || r.ModuleHash == f.Module) &&
		(f.CreatedFrom == 0 || created >= f.CreatedFrom) && (f.CreatedTo == 0 || created < f.CreatedTo) &&
		f.Selects(r)
}

// sortedRuns is Runs by f.Order or descending: every selected run
// sorted by (key, id), from the cursor on.
func (s *Store) sortedRuns(f store.RunFilter, limit int) []store.Run {
	type keyed struct {
		key int64
		r   *store.Run
	}
	var all []keyed
	for _, id := range s.ids {
		if rec := s.runs[id]; selects(f, rec) {
			r := &rec.run
			all = append(all, keyed{store.RunSortKey(*r, f.Order, f.Desc), r})
		}
	}
	order := func(ak int64, aid string, bk int64, bid string) int {
		c := cmp.Compare(ak, bk)
		if c == 0 {
			c = strings.Compare(aid, bid)
		}
		if f.Desc {
			c = -c
		}
		return c
	}
	slices.SortFunc(all, func(a, b keyed) int { return order(a.key, a.r.ID, b.key, b.r.ID) })
	afterKey := f.AfterKey
	if f.Order == store.OrderID {
		afterKey = 0 // the cursor is the id alone
	}
	var rs []store.Run
	for _, k := range all {
		if len(rs) == limit {
			break
		}
		if f.After == "" || order(k.key, k.r.ID, afterKey, f.After) > 0 {
			rs = append(rs, copyRun(*k.r))
		}
	}
	return rs
}

// DueRuns returns the runs a worker should drive (see store.Store),
// ordered by WakeAt then ID, at most limit of them (limit <= 0: no limit).
// It scans every run.
func (s *Store) DueRuns(ctx context.Context, now int64, limit int) ([]store.Run, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: due runs: %w", err)
	}
	var due []*store.Run
	for _, rec := range s.runs {
		if rec.due(now) {
			due = append(due, &rec.run)
		}
	}
	slices.SortFunc(due, func(a, b *store.Run) int {
		return cmp.Or(cmp.Compare(a.WakeAt, b.WakeAt), strings.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	var rs []store.Run
	for _, r := range due {
		rs = append(rs, copyRun(*r))
	}
	return rs, nil
}

// due reports whether a worker should drive the run at time now: it is
// not paused and pending or running, or it is suspended and a timer, its deadline, a
// cancellation or a settlement waits to be delivered.
func (rec *runRec) due(now int64) bool {
	r := &rec.run
	if r.IsPaused() {
		return false
	}
	switch r.Status {
	case store.RunPending, store.RunRunning:
		return true
	case store.RunSuspended:
	default:
		return false
	}
	if r.WakeAt > 0 && r.WakeAt <= now {
		return true
	}
	if r.Deadline > 0 && r.Deadline <= now && r.Cancel == "" {
		return true
	}
	if _, delivered := rec.outcomes[store.CancelKey]; r.Cancel != "" && !delivered {
		return true
	}
	for key := range rec.settlements {
		if rec.undelivered(key) {
			return true
		}
	}
	return false
}

// undelivered reports whether the settlement at key waits to be
// delivered: the run has a pending outcome at key.
func (rec *runRec) undelivered(key string) bool {
	o, ok := rec.outcomes[key]
	return ok && o.Status == store.OutcomePending
}
