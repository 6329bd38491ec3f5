package storetest

import (
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/skeinrun/skein/store"
)

// testClaimRun: ClaimRun takes one named run whatever its status when its
// lease is free or expired, refuses a live lease with a *LeaseHeldError
// naming the holder, and shares tokens, expiry and history with ClaimRuns.
func testClaimRun(t *testing.T, s store.Store) {
	ctx, ttl := t.Context(), int64(leaseTTL)
	if _, err := s.ClaimRun(ctx, "no-such-run", "w1", 1_000, leaseTTL); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ClaimRun of an unknown run: %v, want ErrNotFound", err)
	}
	if _, err := s.ClaimRun(ctx, "r1", "", 1_000, leaseTTL); err == nil {
		t.Errorf("ClaimRun without an owner succeeded")
	}
	createPending(t, s, "r1")
	c1, err := s.ClaimRun(ctx, "r1", "w1", 1_000, leaseTTL)
	if err != nil {
		t.Fatalf("ClaimRun(r1): %v", err)
	}
	if l := c1.Lease; l.RunID != "r1" || l.Owner != "w1" || l.Token != 1 || l.Expiry != 1_000+ttl ||
		c1.Run.ID != "r1" || c1.Run.Status != store.RunPending || c1.Run.LeaseOwner != "w1" || c1.Run.LeaseToken != 1 {
		t.Errorf("ClaimRun(r1) = %+v, want w1's lease 1 until %d on the pending run", c1, 1_000+ttl)
	}
	checkLeaseOf(t, s, c1.Lease)
	// The claimed run is the run as stored after the claim (the host
	// drives it without reading it again).
	if stored, err := s.Run(ctx, "r1"); err != nil || !reflect.DeepEqual(stored, c1.Run) {
		t.Errorf("ClaimRun(r1).Run = %+v; the stored run is %+v (%v)", c1.Run, stored, err)
	}
	// Held: by another owner, or by the same one, ClaimRun and ClaimRuns refuse.
	for _, owner := range []string{"w2", "w1"} {
		_, err := s.ClaimRun(ctx, "r1", owner, 1_000+ttl-1, leaseTTL)
		var held *store.LeaseHeldError
		if !errors.Is(err, store.ErrLeaseHeld) || !errors.As(err, &held) || held.Lease != c1.Lease {
			t.Errorf("ClaimRun of a held run by %s: %v, want a LeaseHeldError naming %+v", owner, err, c1.Lease)
		}
	}
	if cs := mustClaim(t, s, "w2", 1_000+ttl-1, 0); len(cs) != 0 {
		t.Errorf("ClaimRuns took %q, held by ClaimRun", claimedIDs(cs))
	}
	// Expired: claimable, with the next token; the old lease fences nothing.
	c2, err := s.ClaimRun(ctx, "r1", "w2", 1_000+ttl, leaseTTL)
	if err != nil || c2.Lease.Token != 2 || c2.Lease.Owner != "w2" {
		t.Fatalf("ClaimRun after expiry = %+v, %v; want w2's lease 2", c2.Lease, err)
	}
	if err := s.Commit(ctx, store.Batch{Fence: &c1.Lease}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("commit fenced by the expired lease: %v, want ErrLeaseLost", err)
	}
	// A run that ended (not due) is claimable too, and released at once.
	done := mustRun(t, s, "r1")
	done.Status, done.Result = store.RunCompleted, []byte(`1`)
	mustCommit(t, s, store.Batch{Runs: []store.Run{done}, Fence: &c2.Lease, Release: true})
	c3, err := s.ClaimRun(ctx, "r1", "w3", 1_000+ttl+1, leaseTTL)
	if err != nil || c3.Lease.Token != 3 || c3.Run.Status != store.RunCompleted {
		t.Fatalf("ClaimRun of a completed run = %+v, %v; want lease 3 on the completed run", c3, err)
	}
	if err := s.ReleaseLease(ctx, c3.Lease); err != nil {
		t.Fatal(err)
	}
	h, err := s.LeaseHistory(ctx, "r1")
	if err != nil || len(h) != 3 || h[0].Owner != "w1" || h[1].Owner != "w2" || h[2].Owner != "w3" || h[2].ReleasedAt == 0 {
		t.Errorf("lease history = %+v, %v; want w1, w2, w3 (released)", h, err)
	}
}

// testClaimRunConcurrent: of many ClaimRun calls on one free run at once,
// exactly one gets it; the others are told who holds it.
func testClaimRunConcurrent(t *testing.T, s store.Store) {
	createPending(t, s, "r1")
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.ClaimRun(t.Context(), "r1", string(rune('a'+i)), 5_000, leaseTTL)
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrLeaseHeld):
			t.Errorf("claimer %d: %v, want success or ErrLeaseHeld", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d claimers got the run; want exactly 1", won)
	}
	if r := mustRun(t, s, "r1"); r.LeaseToken != 1 {
		t.Errorf("token after the race = %d, want 1", r.LeaseToken)
	}
}

// testCreateClaimedRun: CreateClaimedRun creates a run already claimed by
// its owner (lease 1, in the history; others refused while it lasts; its
// lease fences commits), and leaves a run that existed as it was.
func testCreateClaimedRun(t *testing.T, s store.Store) {
	ctx, ttl := t.Context(), int64(leaseTTL)
	if _, _, err := s.CreateClaimedRun(ctx, store.Run{ID: "r1", ModuleHash: "h", Workflow: "w"}, "", 1_000, leaseTTL); err == nil {
		t.Errorf("CreateClaimedRun without an owner succeeded")
	}
	c, created, err := s.CreateClaimedRun(ctx, store.Run{ID: "r1", ModuleHash: "h", Workflow: "w", Input: []byte(`1`)}, "w1", 1_000, leaseTTL)
	if err != nil || !created {
		t.Fatalf("CreateClaimedRun(r1) = %v, %v; want created", created, err)
	}
	if l := c.Lease; l.RunID != "r1" || l.Owner != "w1" || l.Token != 1 || l.Expiry != 1_000+ttl ||
		c.Run.Status != store.RunPending || c.Run.LeaseOwner != "w1" || c.Run.LeaseToken != 1 || string(c.Run.Input) != "1" {
		t.Errorf("CreateClaimedRun(r1) = %+v; want w1's lease 1 until %d on the new pending run", c, 1_000+ttl)
	}
	checkLeaseOf(t, s, c.Lease)
	if stored, err := s.Run(ctx, "r1"); err != nil || !reflect.DeepEqual(stored, c.Run) {
		t.Errorf("CreateClaimedRun(r1).Run = %+v; the stored run is %+v (%v)", c.Run, stored, err)
	}
	if _, err := s.ClaimRun(ctx, "r1", "w2", 1_000+ttl-1, leaseTTL); !errors.Is(err, store.ErrLeaseHeld) {
		t.Errorf("ClaimRun of a run created claimed: %v, want ErrLeaseHeld", err)
	}
	if cs := mustClaim(t, s, "w2", 1_000+ttl-1, 0); len(cs) != 0 {
		t.Errorf("ClaimRuns took %q, created claimed", claimedIDs(cs))
	}
	r := c.Run
	r.Status = store.RunSuspended
	mustCommit(t, s, store.Batch{Runs: []store.Run{r}, Fence: &c.Lease, Release: true})

	again, created, err := s.CreateClaimedRun(ctx, store.Run{ID: "r1", ModuleHash: "h", Workflow: "w"}, "w2", 2_000+ttl, leaseTTL)
	if err != nil || created || again.Lease != (store.Lease{}) || again.Run.Status != store.RunSuspended || again.Run.LeaseOwner != "" {
		t.Errorf("CreateClaimedRun of an existing run = %+v, %v, %v; want it as stored, unclaimed", again, created, err)
	}
	h, err := s.LeaseHistory(ctx, "r1")
	if err != nil || len(h) != 1 || h[0].Owner != "w1" || h[0].Token != 1 || h[0].ReleasedAt == 0 {
		t.Errorf("lease history = %+v, %v; want w1's lease 1, released", h, err)
	}
}
