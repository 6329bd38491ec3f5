package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// Leases: claims, renewals, releases and their history, and the fence
// a batch commits under.

// release clears rec's lease and stamps its history. The caller holds mu
// and has checked the lease.
func (s *Store) release(rec *runRec, now int64) {
	rec.run.LeaseOwner, rec.run.LeaseExpiry = "", 0
	rec.leases[len(rec.leases)-1].ReleasedAt = now
}

// checkFence checks b's fence, if any: every outcome and run update is for
// the fenced run, and its lease is still the run's current one. The caller
// holds mu.
func (s *Store) checkFence(b *store.Batch) error {
	if err := b.CheckFenceWrites(); err != nil || b.Fence == nil {
		return err
	}
	_, err := s.heldRun(*b.Fence)
	return err
}

// heldRun returns the record of l's run if l is its current lease, and
// fails with store.ErrLeaseLost (wrapped) otherwise. The caller holds mu.
func (s *Store) heldRun(l store.Lease) (*runRec, error) {
	rec := s.runs[l.RunID]
	if rec == nil || rec.run.LeaseOwner == "" || rec.run.LeaseOwner != l.Owner || rec.run.LeaseToken != l.Token {
		return nil, l.LostError()
	}
	return rec, nil
}

// ClaimRuns claims due runs whose lease is free or expired. See
// store.Store.
func (s *Store) ClaimRuns(ctx context.Context, owner string, now int64, ttl time.Duration, limit int) ([]store.ClaimedRun, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return nil, fmt.Errorf("memory store: claim runs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: claim runs: %w", err)
	}
	var due []*runRec
	for _, rec := range s.runs {
		if rec.due(now) && (rec.run.LeaseOwner == "" || rec.run.LeaseExpiry <= now) {
			due = append(due, rec)
		}
	}
	slices.SortFunc(due, func(a, b *runRec) int {
		return cmp.Or(cmp.Compare(a.run.WakeAt, b.run.WakeAt), strings.Compare(a.run.ID, b.run.ID))
	})
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	var out []store.ClaimedRun
	for _, rec := range due {
		out = append(out, s.claim(rec, owner, now, ttl))
	}
	return out, nil
}

// RenewLease extends a lease still held. See store.Store.
func (s *Store) RenewLease(ctx context.Context, l store.Lease, expiry int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory store: renew lease: %w", err)
	}
	rec, err := s.heldRun(l)
	if err != nil {
		return fmt.Errorf("memory store: renew lease: %w", err)
	}
	rec.run.LeaseExpiry = expiry
	rec.leases[len(rec.leases)-1].Expiry = expiry
	return nil
}

// ReleaseLease gives up a lease still held. See store.Store.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory store: release lease: %w", err)
	}
	rec, err := s.heldRun(l)
	if err != nil {
		return fmt.Errorf("memory store: release lease: %w", err)
	}
	s.release(rec, now)
	return nil
}

// LeaseHistory returns every claim of a run in token order. See
// store.Store.
func (s *Store) LeaseHistory(ctx context.Context, runID string) ([]store.LeaseRecord, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: lease history of %s: %w", runID, err)
	}
	rec := s.runs[runID]
	if rec == nil {
		return nil, nil
	}
	return slices.Clone(rec.leases), nil
}
