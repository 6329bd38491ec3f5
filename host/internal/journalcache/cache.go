// Package journalcache keeps in memory the journals of the runs a host
// drives, as a store.Store that wraps the host's store (see Store).
package journalcache

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinrun/skein/store"
)

// The journal cache keeps in memory the journals of the runs this host
// drives, so that the next execution of a run it suspended or evicted
// replays without reading its journal from the store: a 10,000-record
// journal takes tens of milliseconds to read from SQLite, about as long as
// the replay itself.
//
// A journal in memory is used only while it is known to equal the stored
// one. Outcomes are written only by Commit, and only in a batch fenced by
// the run's lease (runState.flush): so from the lease under which the
// journal was read, the journal changes only through this host's own
// commits, which the cache applies with the stores' rule
// (store.MergeOutcome), until the lease ends. The next claim of the run
// keeps the journal only if its lease token follows that lease's directly
// (no other worker held the run in between, lease tokens count the claims
// of a run); any other claim, a failed commit or an unfenced write drops
// it. The cache answers only while this host holds the run's lease; every
// other read goes to the store.
//
// The journal of a run that ended completed, canceled or continued is
// closed: every store refuses to write any outcome of it (store.Batch). So
// once a run is seen final, its journal is kept without a lease: the
// host's own final commit keeps the journal it had (last out of the
// cache's order: a drive never replays it again), and a verifying replay
// (Host.Replay) of a final run keeps what it read.
//
// It sits between the host and the store (Config.Store) as a store.Store.

// DefaultBytes is the default budget of a cache.
const DefaultBytes = 64 << 20

// Store is a store.Store whose Outcomes come from its cache while they
// can. Use it as a pointer from New.
type Store struct {
	store.Store
	c *cache
}

// New returns st with a cache of at most max bytes of journals in front.
// With verify, every answer from memory is checked against st as well,
// and a read fails if the two differ (the host's tests set it).
func New(st store.Store, max int64, verify bool) *Store {
	c := newCache(max)
	c.verify = verify
	return &Store{Store: st, c: c}
}

// Loads returns how many journals were answered from memory and how many
// were read from the store, so far.
func (s *Store) Loads() (memory, stored uint64) {
	return s.c.loads[0].Load(), s.c.loads[1].Load()
}

// cache holds journals by run id, least recently used first out.
type cache struct {
	mu      sync.Mutex
	max     int64 // bytes
	size    int64
	entries map[string]*keptJournal
	lru     list.List         // of *keptJournal; the front is the most recently used
	held    map[string]*lease // the leases this host holds, by run
	now     func() int64      // the clock leases expire by (unix ns)
	loads   [2]atomic.Uint64  // journals answered from memory [0] and read from the store [1]
	verify  bool              // check every answer from memory against the store
}

// keptJournal is one run's journal as the store holds it under lease token.
type keptJournal struct {
	run    string
	token  int64
	outs   []store.Outcome
	byKey  map[string]int // index in outs
	sorted bool           // outs is in store.CompareJournal order
	bytes  int64
	elem   *list.Element
	// final: the run was completed, canceled or continued, and its journal
	// is closed (store.Batch), so it is used without a lease.
	final bool
}

func newCache(max int64) *cache {
	return &cache{max: max, entries: map[string]*keptJournal{}, held: map[string]*lease{},
		now: func() int64 { return time.Now().UnixNano() }}
}

// ClaimRun notes the lease it returns.
func (s *Store) ClaimRun(ctx context.Context, id, owner string, now int64, ttl time.Duration) (store.ClaimedRun, error) {
	cr, err := s.Store.ClaimRun(ctx, id, owner, now, ttl)
	if err == nil {
		s.c.claimed(cr.Lease)
	}
	return cr, err
}

// ClaimRuns notes the leases it returns.
func (s *Store) ClaimRuns(ctx context.Context, owner string, now int64, ttl time.Duration, limit int) ([]store.ClaimedRun, error) {
	crs, err := s.Store.ClaimRuns(ctx, owner, now, ttl, limit)
	for _, cr := range crs {
		s.c.claimed(cr.Lease)
	}
	return crs, err
}

// RenewLease notes the lease's new expiry.
func (s *Store) RenewLease(ctx context.Context, l store.Lease, expiry int64) error {
	err := s.Store.RenewLease(ctx, l, expiry)
	if err == nil {
		s.c.renewed(l, expiry)
	}
	return err
}

// ReleaseLease forgets the lease, released or not.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	s.c.released(l)
	return s.Store.ReleaseLease(ctx, l)
}

// CreateClaimedRun notes the lease of the run it creates, and keeps its
// journal, empty: only the holder of that lease can write it.
func (s *Store) CreateClaimedRun(ctx context.Context, r store.Run, owner string, now int64, ttl time.Duration) (store.ClaimedRun, bool, error) {
	c, created, err := s.Store.CreateClaimedRun(ctx, r, owner, now, ttl)
	if err == nil && created {
		s.c.claimed(c.Lease)
		s.c.put(c.Run.ID, c.Lease.Token, 0, nil)
	}
	return c, created, err
}

// Commit applies b's outcomes to the journals in memory once it is
// committed, and drops the journals it cannot vouch for.
func (s *Store) Commit(ctx context.Context, b store.Batch) error {
	s.c.committing(b)
	err := s.Store.Commit(ctx, b)
	s.c.committed(b, err == nil)
	return err
}

// Outcomes answers from memory while this host holds the run's lease and
// the journal in memory follows it; else it reads the store and keeps
// what it read if the host holds the lease.
func (s *Store) Outcomes(ctx context.Context, runID string) ([]store.Outcome, error) {
	outs, token, gen, ok := s.c.get(runID)
	if ok {
		return s.fromMemory(ctx, runID, outs)
	}
	outs, err := s.Store.Outcomes(ctx, runID)
	if err == nil && token != 0 {
		s.c.put(runID, token, gen, outs)
	}
	s.c.loads[1].Add(1)
	return outs, err
}

// FinalOutcomes is Outcomes of the run id, which the caller read final
// (store.RunStatus.Final) before this call: its journal is closed
// (store.Batch), so the cache answers without a lease, and keeps what it
// reads from the store for good (within its budget). The caller must not
// write the slice: it may be the one the cache keeps.
func (s *Store) FinalOutcomes(ctx context.Context, id string) ([]store.Outcome, error) {
	if outs, ok := s.c.getFinal(id); ok {
		return s.fromMemory(ctx, id, outs)
	}
	if outs, _, _, ok := s.c.get(id); ok {
		return s.fromMemory(ctx, id, outs)
	}
	outs, err := s.Store.Outcomes(ctx, id)
	if err == nil {
		s.c.putFinal(id, outs)
	}
	s.c.loads[1].Add(1)
	return outs, err
}

// fromMemory counts a journal answered from memory, and checks it
// against the store when the cache verifies.
func (s *Store) fromMemory(ctx context.Context, runID string, outs []store.Outcome) ([]store.Outcome, error) {
	s.c.loads[0].Add(1)
	if s.c.verify {
		return outs, s.verify(ctx, runID, outs)
	}
	return outs, nil
}

// verify fails if outs is not what the store holds for runID.
func (s *Store) verify(ctx context.Context, runID string, outs []store.Outcome) error {
	stored, err := s.Store.Outcomes(ctx, runID)
	if err != nil {
		return err
	}
	if len(stored) != len(outs) {
		return fmt.Errorf("journal cache: run %s: %d outcomes in memory, %d stored", runID, len(outs), len(stored))
	}
	for i := range outs {
		if !storedAlike(outs[i], stored[i]) {
			return fmt.Errorf("journal cache: run %s: outcome %d in memory %+v, stored %+v", runID, i, outs[i], stored[i])
		}
	}
	return nil
}

// storedAlike compares two outcomes as stored (times to the nanosecond,
// nil and empty bytes alike).
func storedAlike(a, b store.Outcome) bool {
	return a.Key == b.Key && a.Kind == b.Kind && a.Function == b.Function && a.Status == b.Status &&
		bytes.Equal(a.Value, b.Value) && a.Error == b.Error && a.Attempts == b.Attempts && a.Seq == b.Seq &&
		a.Waited == b.Waited && a.Idle == b.Idle && a.WakeOrder == b.WakeOrder && a.VTime == b.VTime &&
		a.Deadline == b.Deadline && a.Orphaned == b.Orphaned && bytes.Equal(a.Schema, b.Schema) &&
		a.UpdatedAt.UnixNano() == b.UpdatedAt.UnixNano() && a.StartedAt == b.StartedAt && a.SettledAt == b.SettledAt
}

// ResetRun forgets what is kept of the run reset, its journal and its
// lease: the reset releases the lease outside this host's commits.
func (s *Store) ResetRun(ctx context.Context, r store.Reset) (store.Run, error) {
	s.c.forget(r.From)
	defer s.c.forget(r.From)
	return s.Store.ResetRun(ctx, r)
}
