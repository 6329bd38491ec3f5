// Package memory implements store.Store in the memory of the process.
//
// It is meant for simulations, tests and embedding skein where persistence
// is not wanted: New costs a couple of allocations, and every operation is
// a few map lookups, or a scan of one run's records or of the run index,
// under one lock. Nothing is written anywhere: everything stored is lost
// when the Store is closed or the process exits.
//
// Its behaviour matches the reference backend, store/sqlite, and it passes
// the shared suite in store/storetest. Byte slices are copied on the way in
// and on the way out, so callers may reuse their buffers and mutate what
// they are given. Times are kept as given (only their monotonic clock
// reading is dropped); a zero time the store fills in is the wall clock at
// the call.
package memory

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/store"
)

// ErrClosed is returned (wrapped) by every method called after Close.
var ErrClosed = errors.New("store is closed")

// defaultRunsLimit is the page size of Runs when the filter sets none.
const defaultRunsLimit = 100

// Store is a store.Store held in memory. It is safe for concurrent use.
// Create it with New; the zero value is not usable.
type Store struct {
	mu       sync.RWMutex
	closed   bool
	modules  map[string]*moduleRec      // by hash
	names    map[string]string          // module names: the hash each points at
	namedSeq int64                      // last seq of moduleRec.names handed out
	runs     map[string]*runRec         // by ID
	ids      []string                   // the keys of runs, sorted
	tasks    taskQueue                  // activity tasks (tasks.go)
	sched    scheduleMaps               // schedules and hooks (schedules.go)
	batches  map[string]store.BatchJob  // batch jobs by id (batchjobs.go)
	decls    map[string]store.AttrDecl  // attribute declarations by name (attrs.go)
	nss      map[string]store.Namespace // namespace records by name (namespaces.go)
	keys     map[string]store.Key       // API keys by id (keys.go); nil until the first
}

// moduleRec is a stored module.
type moduleRec struct {
	m      store.Module     // Bytes and Workflows are owned by the store
	order  int              // insertion order; breaks CreatedAt ties in Modules
	names  map[string]int64 // the names it was stored under, each with when it last was
	owners map[string]bool  // the namespaces that stored it
}

// runRec is a stored run with its outcomes and settlements.
type runRec struct {
	run         store.Run                   // Input and Result are owned by the store
	outcomes    map[string]store.Outcome    // by key; nil until the first
	settlements map[string]store.Settlement // by key; nil until the first
	leases      []store.LeaseRecord         // lease history, by token
	attempts    map[attemptID]store.Attempt // op attempts (attempts.go); nil until the first
	attrs       map[string]any              // search attribute values (attrs.go); nil until the first
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		modules: make(map[string]*moduleRec),
		names:   make(map[string]string),
		runs:    make(map[string]*runRec),
		nss:     defaultNamespaces(time.Now()),
	}
}

// check returns the error a call fails with before doing anything: ctx's
// error, or ErrClosed. The caller holds mu.
func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed {
		return ErrClosed
	}
	return nil
}

// CreateRun inserts r unless a run with r.ID exists, and returns the run as
// stored and whether this call created it. An empty r.Status is stored as
// pending; a zero CreatedAt is set to now, and a zero UpdatedAt to
// CreatedAt.
func (s *Store) CreateRun(ctx context.Context, r store.Run) (store.Run, bool, error) {
	c, created, err := s.createRun(ctx, r, "", 0, 0)
	return c.Run, created, err
}

// CreateClaimedRun creates a run claimed by owner. See store.Store.
func (s *Store) CreateClaimedRun(ctx context.Context, r store.Run, owner string, now int64, ttl time.Duration) (store.ClaimedRun, bool, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return store.ClaimedRun{}, false, fmt.Errorf("memory store: create run %s: %w", r.ID, err)
	}
	return s.createRun(ctx, r, owner, now, ttl)
}

// createRun inserts r unless it exists and, if owner is set and r is
// new, claims it for owner.
func (s *Store) createRun(ctx context.Context, r store.Run, owner string, now int64, ttl time.Duration) (store.ClaimedRun, bool, error) {
	if r.ID == "" {
		return store.ClaimedRun{}, false, errors.New("memory store: create run: empty id")
	}
	if err := r.CheckTexts(); err != nil {
		return store.ClaimedRun{}, false, fmt.Errorf("memory store: create run: %w", err)
	}
	r = r.ForCreate(time.Now())

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.ClaimedRun{}, false, fmt.Errorf("memory store: create run %s: %w", r.ID, err)
	}
	if rec := s.runs[r.ID]; rec != nil {
		return store.ClaimedRun{Run: copyRun(rec.run)}, false, nil
	}
	s.insertRun(r)
	if owner != "" {
		return s.claim(s.runs[r.ID], owner, now, ttl), true, nil
	}
	return store.ClaimedRun{Run: copyRun(r)}, true, nil
}

// insertRun adds the new run r. The caller holds mu.
func (s *Store) insertRun(r store.Run) {
	s.runs[r.ID] = &runRec{run: copyRun(r)}
	s.runs[r.ID].setAttrs(r.Attrs)
	i, _ := slices.BinarySearch(s.ids, r.ID)
	s.ids = slices.Insert(s.ids, i, r.ID)
}

// checkCreates fails when a run of cs exists already, or when cs names
// one id twice, and returns the ids cs creates. The caller holds mu.
func (s *Store) checkCreates(cs []store.Run) (map[string]bool, error) {
	ids := map[string]bool{}
	for i := range cs {
		id := cs[i].ID
		if id == "" {
			return nil, errors.New("create run: empty id")
		}
		if s.runs[id] != nil || ids[id] {
			return nil, store.CreateConflictError(id)
		}
		ids[id] = true
	}
	return ids, nil
}

// Settle records the settlement of an external promise exactly once. See
// store.Store. A zero st.CreatedAt is set to now.
func (s *Store) Settle(ctx context.Context, st store.Settlement) error {
	if st.Status != store.OutcomeOK && st.Status != store.OutcomeError {
		return fmt.Errorf("memory store: settle %s.%s: status %q is not ok or error", st.RunID, st.Key, st.Status)
	}
	if err := st.CheckTexts(); err != nil {
		return fmt.Errorf("memory store: settle: %w", err)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory store: settle %s.%s: %w", st.RunID, st.Key, err)
	}
	rec := s.runs[st.RunID]
	var o store.Outcome
	var ok bool
	if rec != nil {
		o, ok = rec.outcomes[st.Key]
	}
	if !ok || o.Kind != "promise" {
		return fmt.Errorf("memory store: settle %s.%s: run %q has no promise at key %q: %w",
			st.RunID, st.Key, st.RunID, st.Key, store.ErrNotFound)
	}
	if _, dup := rec.settlements[st.Key]; dup || o.Status != store.OutcomePending {
		return fmt.Errorf("memory store: settle %s.%s: promise %s.%s is settled already: %w",
			st.RunID, st.Key, st.RunID, st.Key, store.ErrConflict)
	}
	rec.addSettlement(st, now)
	return nil
}

// addSettlement stores a copy of st unless the run has a settlement at
// st.Key already. A zero st.CreatedAt becomes now.
func (rec *runRec) addSettlement(st store.Settlement, now time.Time) {
	if _, dup := rec.settlements[st.Key]; dup {
		return
	}
	if rec.settlements == nil {
		rec.settlements = make(map[string]store.Settlement)
	}
	st.Value = bytes.Clone(st.Value)
	st.CreatedAt = orNow(st.CreatedAt, now)
	rec.settlements[st.Key] = st
}

// Settlements returns the run's settlements not yet delivered, oldest
// first (by key among equal CreatedAt). See store.Store. An unknown run has
// none (no error).
func (s *Store) Settlements(ctx context.Context, runID string) ([]store.Settlement, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: settlements of %s: %w", runID, err)
	}
	rec := s.runs[runID]
	if rec == nil {
		return nil, nil
	}
	var out []store.Settlement
	for key, st := range rec.settlements {
		if rec.undelivered(key) {
			st.Value = bytes.Clone(st.Value)
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b store.Settlement) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.Key, b.Key))
	})
	return out, nil
}

// RequestCancel records a cancellation request (and sets UpdatedAt to now)
// unless one was recorded already or the run is terminal. See store.Store.
func (s *Store) RequestCancel(ctx context.Context, runID, reason string) (store.Run, error) {
	if err := store.CheckText("cancel reason", reason); err != nil {
		return store.Run{}, fmt.Errorf("memory store: cancel %s: %w", runID, err)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Run{}, fmt.Errorf("memory store: cancel %s: %w", runID, err)
	}
	rec := s.runs[runID]
	if rec == nil {
		return store.Run{}, fmt.Errorf("memory store: cancel %s: %w", runID, store.ErrNotFound)
	}
	if r := &rec.run; r.Cancel == "" && !r.Status.Terminal() {
		r.Cancel = reason
		r.UpdatedAt = orNow(time.Time{}, now)
	}
	return copyRun(rec.run), nil
}

// Commit applies b atomically. A batch with an outcome, a run update or a
// settlement of an unknown run fails as a whole with store.ErrNotFound
// (wrapped) and leaves no trace. Outcomes are upserted by (run, key) in
// order, so the last of a key wins, except that a pending outcome never
// replaces a settled one and Attempts never goes down. Run updates write
// ModuleHash, Status, Result, Error, WakeAt and UpdatedAt only. A batch
// that would change a settled outcome or an ended run fails as a whole
// with store.ErrImmutable (wrapped; see store.Batch). A settlement is stored unless the run has one at its key. A zero UpdatedAt
// or CreatedAt is stored as now. A fenced batch (b.Fence) whose lease is
// no longer the run's current one fails with store.ErrLeaseLost (wrapped)
// and leaves no trace.
func (s *Store) Commit(ctx context.Context, b store.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory store: commit: %w", err)
	}
	return s.commit(&b)
}

// commit applies b; the caller holds mu.
func (s *Store) commit(bp *store.Batch) error {
	b := *bp
	// Check every write first (the runs it creates count as existing):
	// once these pass, nothing below can fail.
	if err := b.CheckTexts(); err != nil {
		return fmt.Errorf("memory store: commit: %w", err)
	}
	if err := s.checkFence(&b); err != nil {
		return fmt.Errorf("memory store: commit: %w", err)
	}
	creates, err := s.checkCreates(b.Creates)
	if err != nil {
		return fmt.Errorf("memory store: commit: %w", err)
	}
	exists := func(id string) bool { return s.runs[id] != nil || creates[id] }
	for i := range b.Outcomes {
		if ro := &b.Outcomes[i]; !exists(ro.RunID) {
			return fmt.Errorf("memory store: commit: upsert outcome %s/%s: run %w", ro.RunID, ro.Outcome.Key, store.ErrNotFound)
		}
	}
	for i := range b.Runs {
		if id := b.Runs[i].ID; !exists(id) {
			return fmt.Errorf("memory store: commit: update run %s: %w", id, store.ErrNotFound)
		}
	}
	for i := range b.Settlements {
		if st := &b.Settlements[i]; !exists(st.RunID) {
			return fmt.Errorf("memory store: commit: settlement %s/%s: run %w", st.RunID, st.Key, store.ErrNotFound)
		}
	}
	for i := range b.Tasks {
		if t := &b.Tasks[i]; !exists(t.RunID) {
			return fmt.Errorf("memory store: commit: queue task %s.%s: run %w", t.RunID, t.Key, store.ErrNotFound)
		}
	}
	for i := range b.Attempts {
		if a := &b.Attempts[i]; !exists(a.RunID) {
			return fmt.Errorf("memory store: commit: attempt %s/%s#%d: run %w", a.RunID, a.Attempt.Key, a.Attempt.N, store.ErrNotFound)
		}
	}
	for i := range b.Attrs {
		if id := b.Attrs[i].RunID; !exists(id) {
			return fmt.Errorf("memory store: commit: attributes of run %s: %w", id, store.ErrNotFound)
		}
	}
	if err := s.checkWriteOnce(&b); err != nil {
		return fmt.Errorf("memory store: commit: %w", err)
	}

	now := time.Now().Round(0)
	for i := range b.Creates {
		s.insertRun(b.Creates[i].ForCreate(now))
	}
	for i := range b.Outcomes {
		ro := &b.Outcomes[i]
		s.runs[ro.RunID].upsert(ro.Outcome, now)
	}
	for i := range b.Runs {
		u := &b.Runs[i]
		r := &s.runs[u.ID].run
		r.ModuleHash = u.ModuleHash
		r.Status = u.Status
		r.Result = bytes.Clone(u.Result)
		r.Error = u.Error
		r.WakeAt = u.WakeAt
		r.UpdatedAt = orNow(u.UpdatedAt, now)
	}
	for i := range b.Settlements {
		st := b.Settlements[i]
		s.runs[st.RunID].addSettlement(st, now)
	}
	for i := range b.Tasks {
		s.tasks.queue(b.Tasks[i], now)
	}
	for i := range b.Attempts {
		a := &b.Attempts[i]
		s.runs[a.RunID].upsertAttempt(a.Attempt)
	}
	for i := range b.Attrs {
		s.runs[b.Attrs[i].RunID].setAttrs(b.Attrs[i].Values)
	}
	for _, e := range b.ParentEnded {
		rec := s.runs[e.RunID]
		if rec == nil || rec.run.Status.Terminal() {
			continue
		}
		switch r := &rec.run; {
		case e.Abandon:
			r.Abandoned, r.UpdatedAt = true, now
		case r.Cancel == "":
			r.Cancel, r.UpdatedAt = e.Reason, now
		}
	}
	if b.Release {
		s.release(s.runs[b.Fence.RunID], now.UnixNano())
	}
	return nil
}

// upsert stores a copy of o at o.Key by store.MergeOutcome's rule. A
// zero o.UpdatedAt becomes now.
func (rec *runRec) upsert(o store.Outcome, now time.Time) {
	if old, exists := rec.outcomes[o.Key]; exists {
		var ok bool
		if o, ok = store.MergeOutcome(old, o); !ok {
			return
		}
	}
	if rec.outcomes == nil {
		rec.outcomes = make(map[string]store.Outcome)
	}
	o.Value = bytes.Clone(o.Value)
	o.Schema = bytes.Clone(o.Schema)
	o.UpdatedAt = orNow(o.UpdatedAt, now)
	rec.outcomes[o.Key] = o
}

// Outcomes returns every outcome of the run: those with Seq != 0 by Seq,
// then those with Seq 0 by Key (for outcomes the host writes, settled ones
// in settle order, then pending ones). An unknown run has no outcomes (no
// error).
func (s *Store) Outcomes(ctx context.Context, runID string) ([]store.Outcome, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: outcomes of %s: %w", runID, err)
	}
	rec := s.runs[runID]
	if rec == nil || len(rec.outcomes) == 0 {
		return nil, nil
	}
	out := make([]store.Outcome, 0, len(rec.outcomes))
	for _, o := range rec.outcomes {
		o.Value = bytes.Clone(o.Value)
		o.Schema = bytes.Clone(o.Schema)
		out = append(out, o)
	}
	slices.SortFunc(out, store.CompareJournal)
	return out, nil
}

// Outcome returns one outcome of a run. See store.Store.
func (s *Store) Outcome(ctx context.Context, runID, key string) (store.Outcome, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return store.Outcome{}, fmt.Errorf("memory store: outcome %s.%s: %w", runID, key, err)
	}
	rec := s.runs[runID]
	if rec == nil {
		return store.Outcome{}, fmt.Errorf("memory store: outcome %s.%s: %w", runID, key, store.ErrNotFound)
	}
	o, ok := rec.outcomes[key]
	if !ok {
		return store.Outcome{}, fmt.Errorf("memory store: outcome %s.%s: %w", runID, key, store.ErrNotFound)
	}
	o.Value = bytes.Clone(o.Value)
	o.Schema = bytes.Clone(o.Schema)
	return o, nil
}

// Close drops everything stored. Every later call fails with ErrClosed;
// calling Close again is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.modules, s.runs, s.ids = nil, nil, nil
	return nil
}

// orNow returns t without its monotonic clock reading, or now (likewise)
// when t is zero.
func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now.Round(0)
	}
	return t.Round(0)
}

// copyRun returns r with its own copies of Input and Result.
func copyRun(r store.Run) store.Run {
	r.Input = bytes.Clone(r.Input)
	r.Result = bytes.Clone(r.Result)
	r.Attrs = nil // reads leave it nil (store.Run.Attrs)
	return r
}
