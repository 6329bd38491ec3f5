package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// checkWriteOnce fails with store.ErrImmutable (wrapped) if applying b in
// order would change a settled outcome, an ended run or the journal of a
// final run (see store.Batch).
// The caller holds mu and has checked that every run of b exists.
func (s *Store) checkWriteOnce(b *store.Batch) error {
	type runKey struct{ run, key string }
	seen := map[runKey]store.Outcome{} // the outcomes as b's earlier writes leave them
	for i := range b.Outcomes {
		ro := &b.Outcomes[i]
		k := runKey{ro.RunID, ro.Outcome.Key}
		rec := s.runs[ro.RunID] // nil: a run b creates
		if rec != nil && rec.run.Status.Final() {
			return store.JournalClosedError(ro.RunID, rec.run.Status)
		}
		old, ok := seen[k]
		if !ok && rec != nil {
			old, ok = rec.outcomes[k.key]
		}
		if ok && store.ChangesSettled(old, ro.Outcome) {
			return store.OutcomeImmutableError(ro.RunID, old)
		}
		if !ok || old.Status == store.OutcomePending || ro.Outcome.Status != store.OutcomePending {
			seen[k] = ro.Outcome
		}
	}
	runs := map[string]store.Run{}
	for i := range b.Runs {
		u := &b.Runs[i]
		old, ok := runs[u.ID]
		if rec := s.runs[u.ID]; !ok && rec != nil { // nil: a run b creates
			old = rec.run
		}
		if store.ChangesFinal(old, *u) {
			return store.RunImmutableError(old)
		}
		old.Status, old.Result, old.Error, old.ModuleHash = u.Status, u.Result, u.Error, u.ModuleHash
		runs[u.ID] = old
	}
	return nil
}

// ClaimRun claims one run, whatever its status, if its lease is free or
// expired and it is not paused. See store.Store.
func (s *Store) ClaimRun(ctx context.Context, id, owner string, now int64, ttl time.Duration) (store.ClaimedRun, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return store.ClaimedRun{}, fmt.Errorf("memory store: claim run %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.ClaimedRun{}, fmt.Errorf("memory store: claim run %s: %w", id, err)
	}
	rec := s.runs[id]
	if rec == nil {
		return store.ClaimedRun{}, fmt.Errorf("memory store: claim run %s: %w", id, store.ErrNotFound)
	}
	if r := &rec.run; r.LeaseOwner != "" && r.LeaseExpiry > now {
		held := store.Lease{RunID: id, Owner: r.LeaseOwner, Token: r.LeaseToken, Expiry: r.LeaseExpiry}
		return store.ClaimedRun{}, fmt.Errorf("memory store: claim run %s: %w", id, &store.LeaseHeldError{Lease: held})
	}
	if r := &rec.run; r.IsPaused() {
		return store.ClaimedRun{}, fmt.Errorf("memory store: claim run %s: %w", id, &store.PausedError{RunID: id, Pause: r.Paused})
	}
	return s.claim(rec, owner, now, ttl), nil
}

// claim gives rec a new lease of owner until now+ttl and records it in
// its history. The caller holds mu and has checked that the lease is free
// or expired.
func (s *Store) claim(rec *runRec, owner string, now int64, ttl time.Duration) store.ClaimedRun {
	r := &rec.run
	r.LeaseOwner, r.LeaseToken, r.LeaseExpiry = owner, r.LeaseToken+1, now+int64(ttl)
	at := now
	if n := len(rec.leases); n > 0 {
		at = max(at, rec.leases[n-1].ReleasedAt) // see LeaseRecord.ClaimedAt
	}
	rec.leases = append(rec.leases, store.LeaseRecord{RunID: r.ID, Owner: owner, Token: r.LeaseToken, ClaimedAt: at, Expiry: r.LeaseExpiry})
	return store.ClaimedRun{Run: copyRun(*r), Lease: store.Lease{RunID: r.ID, Owner: owner, Token: r.LeaseToken, Expiry: r.LeaseExpiry}}
}
