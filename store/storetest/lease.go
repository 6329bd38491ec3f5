package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// leaseTTL is the lease duration the lease tests claim with.
const leaseTTL = 30 * time.Second

// claimedIDs returns the run IDs of cs, in order.
func claimedIDs(cs []store.ClaimedRun) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.Run.ID)
	}
	return ids
}

func mustClaim(t *testing.T, s store.Store, owner string, now int64, limit int) []store.ClaimedRun {
	t.Helper()
	cs, err := s.ClaimRuns(t.Context(), owner, now, leaseTTL, limit)
	if err != nil {
		t.Fatalf("ClaimRuns(%s, %d, %d): %v", owner, now, limit, err)
	}
	return cs
}

// mustClaimOne claims for owner at now and fails unless exactly the run
// id is claimed.
func mustClaimOne(t *testing.T, s store.Store, owner string, now int64, id string) store.Lease {
	t.Helper()
	cs := mustClaim(t, s, owner, now, 0)
	if got := claimedIDs(cs); !slices.Equal(got, []string{id}) {
		t.Fatalf("ClaimRuns(%s, %d) = %q, want [%s]", owner, now, got, id)
	}
	return cs[0].Lease
}

// createPending creates pending (hence due) runs with the given IDs.
func createPending(t *testing.T, s store.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		mustCreateRun(t, s, testRun(id))
	}
}

func checkLeaseOf(t *testing.T, s store.Store, l store.Lease) {
	t.Helper()
	r := mustRun(t, s, l.RunID)
	if r.LeaseOwner != l.Owner || r.LeaseToken != l.Token || r.LeaseExpiry != l.Expiry {
		t.Errorf("run %s lease = (%q, token %d, expiry %d), want (%q, token %d, expiry %d)",
			l.RunID, r.LeaseOwner, r.LeaseToken, r.LeaseExpiry, l.Owner, l.Token, l.Expiry)
	}
}

func testLeaseClaimDueOnly(t *testing.T, s store.Store) {
	const now = 1_000
	for _, r := range []struct {
		id     string
		status store.RunStatus
		wake   int64
	}{
		{"a-due", store.RunSuspended, 500},
		{"c-later", store.RunSuspended, now + 1},
		{"d-no-timer", store.RunSuspended, 0},
		{"e-pending", store.RunPending, 0},
		{"f-running", store.RunRunning, 0},
		{"g-done", store.RunCompleted, 10},
		{"i-diverged", store.RunDiverged, 10},
	} {
		run := testRun(r.id)
		if got := mustCreateRun(t, s, run); got.LeaseOwner != "" || got.LeaseToken != 0 || got.LeaseExpiry != 0 {
			t.Errorf("new run %s has a lease: %+v", r.id, got)
		}
		run.Status, run.WakeAt = r.status, r.wake
		mustCommit(t, s, store.Batch{Runs: []store.Run{run}})
	}
	ctx := t.Context()
	due, err := s.DueRuns(ctx, now, 0)
	if err != nil {
		t.Fatalf("DueRuns: %v", err)
	}
	want := []string{"e-pending", "f-running", "a-due"}
	if got := runIDs(due); !slices.Equal(got, want) {
		t.Fatalf("DueRuns = %q, want %q", got, want)
	}

	// A limit takes the first due runs, in DueRuns order.
	cs := mustClaim(t, s, "w1", now, 2)
	if got := claimedIDs(cs); !slices.Equal(got, want[:2]) {
		t.Errorf("ClaimRuns(limit 2) = %q, want %q", got, want[:2])
	}
	cs = append(cs, mustClaim(t, s, "w1", now, 0)...)
	if got := claimedIDs(cs); !slices.Equal(got, want) {
		t.Errorf("ClaimRuns = %q, want %q", got, want)
	}
	for _, c := range cs {
		wantLease := store.Lease{RunID: c.Run.ID, Owner: "w1", Token: 1, Expiry: now + int64(leaseTTL)}
		if c.Lease != wantLease {
			t.Errorf("lease of %s = %+v, want %+v", c.Run.ID, c.Lease, wantLease)
		}
		if c.Run.LeaseOwner != "w1" || c.Run.LeaseToken != 1 || c.Run.LeaseExpiry != wantLease.Expiry {
			t.Errorf("claimed run %s shows lease (%q, %d, %d), want the new one", c.Run.ID, c.Run.LeaseOwner, c.Run.LeaseToken, c.Run.LeaseExpiry)
		}
		checkLeaseOf(t, s, wantLease)
	}
	// Held leases are not claimable, not even by their owner.
	if cs := mustClaim(t, s, "w2", now, 0); len(cs) != 0 {
		t.Errorf("ClaimRuns while every due run is held = %q, want none", claimedIDs(cs))
	}
	if cs := mustClaim(t, s, "w1", now, 0); len(cs) != 0 {
		t.Errorf("ClaimRuns by the holder = %q, want none", claimedIDs(cs))
	}
	// DueRuns and Runs show the leases.
	due, err = s.DueRuns(ctx, now, 0)
	if err != nil {
		t.Fatalf("DueRuns: %v", err)
	}
	rs, err := s.Runs(ctx, store.RunFilter{})
	if err != nil {
		t.Fatalf("Runs: %v", err)
	}
	for _, r := range append(due, rs...) {
		held := slices.Contains(want, r.ID)
		if (r.LeaseOwner == "w1") != held || (r.LeaseToken == 1) != held {
			t.Errorf("run %s: lease (%q, %d), held = %v", r.ID, r.LeaseOwner, r.LeaseToken, held)
		}
	}
	// Bad arguments.
	if _, err := s.ClaimRuns(ctx, "", now, leaseTTL, 0); err == nil {
		t.Error("ClaimRuns with an empty owner: no error")
	}
	if _, err := s.ClaimRuns(ctx, "w1", now, 0, 0); err == nil {
		t.Error("ClaimRuns with a zero ttl: no error")
	}
}

func testLeaseClaimConcurrent(t *testing.T, s store.Store) {
	const runs, owners = 40, 8
	for i := range runs {
		createPending(t, s, fmt.Sprintf("run-%02d", i))
	}
	ctx := t.Context()
	var mu sync.Mutex
	byRun := map[string][]string{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for o := range owners {
		wg.Go(func() {
			<-start
			owner := fmt.Sprintf("w%d", o)
			for range runs {
				cs, err := s.ClaimRuns(ctx, owner, 1_000, leaseTTL, 3)
				if err != nil {
					t.Errorf("ClaimRuns(%s): %v", owner, err)
					return
				}
				if len(cs) == 0 {
					return
				}
				mu.Lock()
				for _, c := range cs {
					byRun[c.Run.ID] = append(byRun[c.Run.ID], owner)
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(byRun) != runs {
		t.Errorf("%d runs claimed, want %d", len(byRun), runs)
	}
	for id, os := range byRun {
		if len(os) != 1 {
			t.Errorf("run %s claimed %d times (by %q)", id, len(os), os)
			continue
		}
		h, err := s.LeaseHistory(ctx, id)
		if err != nil {
			t.Fatalf("LeaseHistory(%s): %v", id, err)
		}
		if len(h) != 1 || h[0].Owner != os[0] || h[0].Token != 1 {
			t.Errorf("history of %s = %+v, want one claim by %s", id, h, os[0])
		}
	}
}

func testLeaseExpiredReclaim(t *testing.T, s store.Store) {
	createPending(t, s, "r1")
	ttl := int64(leaseTTL)
	l1 := mustClaimOne(t, s, "w1", 1_000, "r1")
	// Not claimable before the expiry, claimable from it on.
	if cs := mustClaim(t, s, "w2", 1_000+ttl-1, 0); len(cs) != 0 {
		t.Errorf("claim before expiry = %q, want none", claimedIDs(cs))
	}
	l2 := mustClaimOne(t, s, "w2", 1_000+ttl, "r1")
	if l2.Token <= l1.Token || l2.Owner != "w2" || l2.Expiry != 1_000+2*ttl {
		t.Errorf("lease after expiry = %+v, want owner w2, a token > %d, expiry %d", l2, l1.Token, 1_000+2*ttl)
	}
	checkLeaseOf(t, s, l2)
	// The same owner claiming again after expiry gets a new token too.
	l3 := mustClaimOne(t, s, "w2", l2.Expiry+5, "r1")
	if l3.Token <= l2.Token {
		t.Errorf("token after reclaim by the same owner = %d, want > %d", l3.Token, l2.Token)
	}
	// The old holders are locked out.
	ctx := t.Context()
	for _, l := range []store.Lease{l1, l2} {
		if err := s.RenewLease(ctx, l, l3.Expiry+ttl); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("RenewLease(token %d) = %v, want ErrLeaseLost", l.Token, err)
		}
	}
	checkLeaseOf(t, s, l3)
	// A released run is claimable at once, with a new token.
	if err := s.ReleaseLease(ctx, l3); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	l4 := mustClaimOne(t, s, "w1", l2.Expiry+6, "r1") // before l3.Expiry
	if l4.Token <= l3.Token {
		t.Errorf("token after release = %d, want > %d", l4.Token, l3.Token)
	}
}

func testLeaseStaleRenewRelease(t *testing.T, s store.Store) {
	createPending(t, s, "r1", "r2")
	ctx := t.Context()
	cs := mustClaim(t, s, "w1", 1_000, 0)
	if len(cs) != 2 {
		t.Fatalf("claimed %q, want r1 and r2", claimedIDs(cs))
	}
	l := cs[0].Lease
	// Renewing the current lease extends it, again and again.
	for _, exp := range []int64{5_000_000_000_000, 6_000_000_000_000} {
		if err := s.RenewLease(ctx, l, exp); err != nil {
			t.Fatalf("RenewLease: %v", err)
		}
		l.Expiry = exp
		checkLeaseOf(t, s, l)
	}
	// Wrong token, wrong owner, wrong run, unknown run: lost, nothing changes.
	for _, bad := range []store.Lease{
		{RunID: l.RunID, Owner: l.Owner, Token: l.Token - 1},
		{RunID: l.RunID, Owner: l.Owner, Token: l.Token + 1},
		{RunID: l.RunID, Owner: "w2", Token: l.Token},
		{RunID: "no-such-run", Owner: l.Owner, Token: l.Token},
	} {
		if err := s.RenewLease(ctx, bad, 9e18); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("RenewLease(%+v) = %v, want ErrLeaseLost", bad, err)
		}
		if err := s.ReleaseLease(ctx, bad); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("ReleaseLease(%+v) = %v, want ErrLeaseLost", bad, err)
		}
	}
	checkLeaseOf(t, s, l)
	// Release: no owner, no expiry, the token kept; then the lease is lost.
	if err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	checkLeaseOf(t, s, store.Lease{RunID: l.RunID, Token: l.Token})
	if err := s.ReleaseLease(ctx, l); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("second ReleaseLease = %v, want ErrLeaseLost", err)
	}
	if err := s.RenewLease(ctx, l, 9e18); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("RenewLease after release = %v, want ErrLeaseLost", err)
	}
	checkLeaseOf(t, s, store.Lease{RunID: l.RunID, Token: l.Token})
	// The other run's lease is untouched.
	checkLeaseOf(t, s, cs[1].Lease)
}

func testLeaseFencedCommit(t *testing.T, s store.Store) {
	createPending(t, s, "r1")
	ctx := t.Context()
	old := mustClaimOne(t, s, "w1", 1_000, "r1")
	cur := mustClaimOne(t, s, "w2", old.Expiry, "r1")
	createPending(t, s, "r2")
	step := func(key string) store.Outcome {
		return store.Outcome{Key: key, Kind: "step", Function: "f", Status: store.OutcomeOK, Value: []byte(`1`), Seq: 1, UpdatedAt: ts(3)}
	}
	update := testRun("r1")
	update.Status, update.WakeAt = store.RunSuspended, 77
	keys := func(id string) []string {
		var ks []string
		for _, o := range mustOutcomes(t, s, id) {
			ks = append(ks, o.Key)
		}
		return ks
	}

	// A stale token: nothing applied, ErrLeaseLost.
	stale := store.Batch{Outcomes: []store.RunOutcome{ro("r1", step("stale"))}, Runs: []store.Run{update},
		Settlements: []store.Settlement{{RunID: "r2", Key: "p", Status: store.OutcomeOK, Value: []byte(`1`)}}, Fence: &old}
	if err := s.Commit(ctx, stale); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Commit fenced with a stale token = %v, want ErrLeaseLost", err)
	}
	if err := s.Commit(ctx, store.Batch{Fence: &old}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("empty Commit fenced with a stale token = %v, want ErrLeaseLost", err)
	}
	if ks := keys("r1"); len(ks) != 0 {
		t.Errorf("outcomes of r1 after stale commits = %q, want none", ks)
	}
	if r := mustRun(t, s, "r1"); r.Status != store.RunPending || r.WakeAt != 0 {
		t.Errorf("run after stale commit: status %s, wake %d; want unchanged", r.Status, r.WakeAt)
	}
	// A fenced batch may not write another run's outcomes or state.
	for _, b := range []store.Batch{
		{Outcomes: []store.RunOutcome{ro("r1", step("mixed")), ro("r2", step("mixed"))}, Fence: &cur},
		{Runs: []store.Run{testRun("r2")}, Fence: &cur},
	} {
		if err := s.Commit(ctx, b); err == nil {
			t.Errorf("fenced Commit writing another run: no error")
		}
	}
	if ks := append(keys("r1"), keys("r2")...); len(ks) != 0 {
		t.Errorf("outcomes after refused commits = %q, want none", ks)
	}

	// Unfenced, and fenced with the current lease: applied. Run updates
	// leave the lease alone.
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("r1", step("plain"))}})
	if err := s.Commit(ctx, store.Batch{Fence: &cur}); err != nil {
		t.Errorf("empty Commit fenced with the current lease: %v", err)
	}
	cb := stale
	cb.Outcomes = []store.RunOutcome{ro("r1", step("current"))}
	cb.Fence = &cur
	if err := s.Commit(ctx, cb); err != nil {
		t.Fatalf("Commit fenced with the current lease: %v", err)
	}
	if ks := keys("r1"); !slices.Equal(ks, []string{"current", "plain"}) {
		t.Errorf("outcomes of r1 = %q, want [current plain]", ks)
	}
	if r := mustRun(t, s, "r1"); r.Status != store.RunSuspended || r.WakeAt != 77 {
		t.Errorf("run after fenced commit: status %s, wake %d; want suspended, 77", r.Status, r.WakeAt)
	}
	checkLeaseOf(t, s, cur)
	mustCommit(t, s, store.Batch{Runs: []store.Run{update}})
	checkLeaseOf(t, s, cur)

	// Released: the lease no longer fences.
	if err := s.ReleaseLease(ctx, cur); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	late := store.Batch{Outcomes: []store.RunOutcome{ro("r1", step("late"))}, Fence: &cur}
	if err := s.Commit(ctx, late); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Commit fenced with a released lease = %v, want ErrLeaseLost", err)
	}
	if ks := keys("r1"); slices.Contains(ks, "late") {
		t.Errorf("outcomes of r1 = %q: the late write landed", ks)
	}
}

// testLeaseFencedCommitFailsAlone commits many batches at once, some
// fenced with a stale lease: each of those fails alone, the others land
// (group commit must not let one sink the others, nor apply it).
func testLeaseFencedCommitFailsAlone(t *testing.T, s store.Store) {
	const runs, rounds = 8, 10
	ctx := t.Context()
	leases := map[string][2]store.Lease{} // run → (stale, current)
	for i := range runs {
		id := fmt.Sprintf("run-%02d", i)
		createPending(t, s, id)
		old := mustClaimOne(t, s, "w1", 1_000, id)
		cur := mustClaimOne(t, s, "w2", old.Expiry, id)
		leases[id] = [2]store.Lease{old, cur}
	}
	var wg sync.WaitGroup
	for round := range rounds {
		start := make(chan struct{})
		for id, ls := range leases {
			for i, kind := range []string{"stale", "current", "plain"} {
				wg.Go(func() {
					<-start
					o := store.Outcome{Key: fmt.Sprintf("%s.%d", kind, round), Kind: "step", Function: "f", Status: store.OutcomeOK, Seq: 1, UpdatedAt: ts(0)}
					b := store.Batch{Outcomes: []store.RunOutcome{ro(id, o)}}
					if i < 2 {
						b.Fence = &ls[i]
					}
					err := s.Commit(ctx, b)
					if kind == "stale" && !errors.Is(err, store.ErrLeaseLost) {
						t.Errorf("%s %s: Commit = %v, want ErrLeaseLost", id, o.Key, err)
					}
					if kind != "stale" && err != nil {
						t.Errorf("%s %s: Commit: %v", id, o.Key, err)
					}
				})
			}
		}
		close(start)
		wg.Wait()
	}
	for id := range leases {
		var got []string
		for _, o := range mustOutcomes(t, s, id) {
			got = append(got, o.Key)
		}
		var want []string
		for round := range rounds {
			want = append(want, fmt.Sprintf("current.%d", round), fmt.Sprintf("plain.%d", round))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("outcomes of %s = %q, want %q", id, got, want)
		}
	}
}

func testLeaseHistory(t *testing.T, s store.Store) {
	createPending(t, s, "r1", "r2")
	ctx := t.Context()
	if h, err := s.LeaseHistory(ctx, "r1"); err != nil || len(h) != 0 {
		t.Fatalf("LeaseHistory before any claim = %+v, %v; want none", h, err)
	}
	if h, err := s.LeaseHistory(ctx, "no-such-run"); err != nil || len(h) != 0 {
		t.Fatalf("LeaseHistory of an unknown run = %+v, %v; want none", h, err)
	}
	// Claims use the wall clock here, as a worker would, so that release
	// times (the store's clock) compare with claim times.
	base, ttl := time.Now().UnixNano(), int64(leaseTTL)
	if cs := mustClaim(t, s, "w1", base, 0); len(cs) != 2 || cs[0].Run.ID != "r1" {
		t.Fatalf("claimed %q, want [r1 r2]", claimedIDs(cs))
	}
	l1 := store.Lease{RunID: "r1", Owner: "w1", Token: 1}
	if err := s.RenewLease(ctx, l1, base+2*ttl); err != nil {
		t.Fatal(err)
	}
	// r1 expired at base+2*ttl and r2 at base+ttl: limit 1 takes r1 (ID order).
	claimR1 := func(owner string, now int64) store.Lease {
		t.Helper()
		cs := mustClaim(t, s, owner, now, 1)
		if len(cs) != 1 || cs[0].Run.ID != "r1" {
			t.Fatalf("ClaimRuns(%s, limit 1) = %q, want [r1]", owner, claimedIDs(cs))
		}
		return cs[0].Lease
	}
	l2 := claimR1("w2", base+2*ttl)
	before := time.Now().UnixNano()
	if err := s.ReleaseLease(ctx, l2); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixNano()
	l3 := claimR1("w1", base+2*ttl+1)
	h, err := s.LeaseHistory(ctx, "r1")
	if err != nil {
		t.Fatalf("LeaseHistory: %v", err)
	}
	want := []store.LeaseRecord{
		{RunID: "r1", Owner: "w1", Token: 1, ClaimedAt: base, Expiry: base + 2*ttl},
		{RunID: "r1", Owner: "w2", Token: 2, ClaimedAt: base + 2*ttl, Expiry: base + 3*ttl},
		{RunID: "r1", Owner: "w1", Token: 3, ClaimedAt: base + 2*ttl + 1, Expiry: base + 3*ttl + 1},
	}
	if len(h) != len(want) {
		t.Fatalf("LeaseHistory = %+v, want %+v", h, want)
	}
	if r := h[1].ReleasedAt; r < before || r > after {
		t.Errorf("ReleasedAt = %d, want within [%d, %d]", r, before, after)
	}
	released := h[1].ReleasedAt
	h[1].ReleasedAt = 0
	if !slices.Equal(h, want) {
		t.Errorf("LeaseHistory = %+v, want %+v", h, want)
	}
	h[1].ReleasedAt = released
	// No two claims overlap.
	for i := 1; i < len(h); i++ {
		if h[i].ClaimedAt < h[i-1].End() {
			t.Errorf("claim %d at %d starts before claim %d ends (%d)", h[i].Token, h[i].ClaimedAt, h[i-1].Token, h[i-1].End())
		}
	}
	// A claimer whose now was read before the release it follows had
	// committed (it waited for a connection) is recorded at the release.
	if err := s.ReleaseLease(ctx, l3); err != nil {
		t.Fatal(err)
	}
	claimR1("w2", base)
	if h, err = s.LeaseHistory(ctx, "r1"); err != nil || len(h) != 4 {
		t.Fatalf("LeaseHistory after a fourth claim = %+v, %v", h, err)
	}
	if h[3].ClaimedAt != h[2].ReleasedAt || h[2].ReleasedAt < after {
		t.Errorf("claim at %d after a release at %d recorded at %d; want the release's time", base, h[2].ReleasedAt, h[3].ClaimedAt)
	}
	h2, err := s.LeaseHistory(ctx, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if len(h2) == 0 || h2[0].Token != 1 || h2[0].Owner != "w1" {
		t.Errorf("LeaseHistory(r2) = %+v, want w1's claim first", h2)
	}
}

// testLeaseReleaseInCommit: a fenced batch with Release applies its writes
// and releases the lease in one commit; the lease fences nothing after
// it. Release needs a fence, and a stale one fails the whole batch.
// Concurrent fenced commits racing the releasing one either land before
// the release or fail with ErrLeaseLost, leaving no trace.
func testLeaseReleaseInCommit(t *testing.T, s store.Store) {
	createPending(t, s, "r1", "r2", "r3")
	ctx := t.Context()
	step := func(key string) store.Outcome {
		return store.Outcome{Key: key, Kind: "step", Function: "f", Status: store.OutcomeOK, Value: []byte(`1`), Seq: 1, UpdatedAt: ts(3)}
	}
	has := func(id, key string) bool {
		for _, o := range mustOutcomes(t, s, id) {
			if o.Key == key {
				return true
			}
		}
		return false
	}
	cs := mustClaim(t, s, "w1", time.Now().UnixNano(), 0)
	if len(cs) != 3 {
		t.Fatalf("claimed %q, want r1 r2 r3", claimedIDs(cs))
	}
	l1, l2, l3 := cs[0].Lease, cs[1].Lease, cs[2].Lease

	done := testRun("r1")
	done.Status, done.Result = store.RunCompleted, []byte(`7`)
	before := time.Now().UnixNano()
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("r1", step("last"))}, Runs: []store.Run{done}, Fence: &l1, Release: true})
	r := mustRun(t, s, "r1")
	if r.Status != store.RunCompleted || !has("r1", "last") {
		t.Errorf("after a releasing commit: run %s, outcome stored %v; want completed with it", r.Status, has("r1", "last"))
	}
	if r.LeaseOwner != "" || r.LeaseExpiry != 0 || r.LeaseToken != l1.Token {
		t.Errorf("lease after a releasing commit = (%q, %d, token %d), want free with token %d", r.LeaseOwner, r.LeaseExpiry, r.LeaseToken, l1.Token)
	}
	if h, err := s.LeaseHistory(ctx, "r1"); err != nil || len(h) != 1 || h[0].ReleasedAt < before {
		t.Errorf("history after a releasing commit = %+v, %v; want the lease released", h, err)
	}
	if err := s.RenewLease(ctx, l1, time.Now().UnixNano()); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("RenewLease after a releasing commit = %v, want ErrLeaseLost", err)
	}
	if err := s.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{ro("r1", step("after"))}, Fence: &l1}); !errors.Is(err, store.ErrLeaseLost) || has("r1", "after") {
		t.Errorf("fenced commit after the release = %v (stored: %v), want ErrLeaseLost and nothing stored", err, has("r1", "after"))
	}

	// Release without a fence: refused, nothing applied.
	if err := s.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{ro("r2", step("x"))}, Release: true}); !errors.Is(err, store.ErrReleaseUnfenced) || has("r2", "x") {
		t.Errorf("Release without a fence = %v (stored: %v), want ErrReleaseUnfenced and nothing stored", err, has("r2", "x"))
	}
	// A stale fence with Release: ErrLeaseLost, nothing applied.
	if err := s.ReleaseLease(ctx, l2); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{ro("r2", step("y"))}, Fence: &l2, Release: true}); !errors.Is(err, store.ErrLeaseLost) || has("r2", "y") {
		t.Errorf("releasing commit with a released lease = %v (stored: %v), want ErrLeaseLost and nothing stored", err, has("r2", "y"))
	}

	// Racing commits of one lease: the releasing one and plain fenced ones.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := store.Batch{Outcomes: []store.RunOutcome{ro("r3", step(fmt.Sprintf("k%d", i)))}, Fence: &l3}
			b.Release = i == 3
			errs[i] = s.Commit(ctx, b)
		}()
	}
	wg.Wait()
	if errs[3] != nil {
		t.Fatalf("the releasing commit failed: %v", errs[3])
	}
	for i, err := range errs {
		stored := has("r3", fmt.Sprintf("k%d", i))
		if (err == nil) != stored || (err != nil && !errors.Is(err, store.ErrLeaseLost)) {
			t.Errorf("racing commit %d: %v, stored %v; want success and stored, or ErrLeaseLost and not", i, err, stored)
		}
	}
	if r := mustRun(t, s, "r3"); r.LeaseOwner != "" {
		t.Errorf("r3 still held by %q after its releasing commit", r.LeaseOwner)
	}
}
