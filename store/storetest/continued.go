package storetest

import (
	"errors"
	"testing"

	"github.com/skeinrun/skein/store"
)

// testContinueAtomic: a batch that ends a run as continued and creates its
// successor (Batch.Creates) applies both or neither: a lost fence, or a
// successor id taken already, leaves the run as it was and creates no
// run; a good batch does both, the successor pending with its input and
// no lease. A continued run is write-once.
func testContinueAtomic(t *testing.T, s store.Store) {
	ctx := t.Context()
	createPending(t, s, "sub")
	c1, err := s.ClaimRun(ctx, "sub", "w1", 1_000, leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	next := testRun("sub~2")
	next.Parent, next.Input = "", []byte(`{"cycle":12}`)
	ended := mustRun(t, s, "sub")
	ended.Status = store.RunContinued
	batch := func(l store.Lease) store.Batch {
		return store.Batch{Creates: []store.Run{next}, Runs: []store.Run{ended}, Fence: &l, Release: true}
	}
	// Fenced by a lease taken over since: neither write is applied.
	c2, err := s.ClaimRun(ctx, "sub", "w2", 1_000+int64(leaseTTL), leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, batch(c1.Lease)); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("continue fenced by a lost lease: %v, want ErrLeaseLost", err)
	}
	checkNotContinued(t, s, "sub", "sub~2", "a lost fence")
	// The successor's id is taken: the batch fails with ErrConflict and
	// the run does not end.
	taken := testRun("taken~2")
	mustCreateRun(t, s, taken)
	b := batch(c2.Lease)
	b.Creates = []store.Run{next, taken}
	if err := s.Commit(ctx, b); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("continue onto a taken id: %v, want ErrConflict", err)
	}
	checkNotContinued(t, s, "sub", "sub~2", "a taken successor id")
	// Both, in one commit.
	mustCommit(t, s, batch(c2.Lease))
	if got := mustRun(t, s, "sub"); got.Status != store.RunContinued || got.LeaseOwner != "" {
		t.Errorf("run after the continue: %s, lease %q; want continued, released", got.Status, got.LeaseOwner)
	}
	got := mustRun(t, s, "sub~2")
	if got.Status != store.RunPending || string(got.Input) != `{"cycle":12}` || got.Workflow != next.Workflow ||
		got.ModuleHash != next.ModuleHash || got.Seed != next.Seed || got.LeaseToken != 0 {
		t.Errorf("successor = %+v, want pending with the new input, workflow, module and seed", got)
	}
	// The same continue again (a retried commit) fails: the id exists.
	if err := s.Commit(ctx, store.Batch{Creates: []store.Run{next}}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("creating the successor twice: %v, want ErrConflict", err)
	}
	// Continued is final.
	again := mustRun(t, s, "sub")
	again.Status = store.RunRunning
	if err := s.Commit(ctx, store.Batch{Runs: []store.Run{again}}); !errors.Is(err, store.ErrImmutable) {
		t.Errorf("update of a continued run's status: %v, want ErrImmutable", err)
	}
}

// checkNotContinued fails unless run id is not continued and succ does not exist.
func checkNotContinued(t *testing.T, s store.Store, id, succ, after string) {
	t.Helper()
	if got := mustRun(t, s, id); got.Status == store.RunContinued {
		t.Errorf("after %s: run %s is continued, want unchanged", after, id)
	}
	if _, err := s.Run(t.Context(), succ); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after %s: successor %s: %v, want ErrNotFound (not created)", after, succ, err)
	}
}
