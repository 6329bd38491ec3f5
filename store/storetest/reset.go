package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/skeinrun/skein/store"
)

// resetOf is a reset of run from onto the new run id, with journal outs
// (of id), an attempt of its first key and a settlement of a promise.
func resetOf(from, id string, outs ...store.Outcome) store.Reset {
	r := testRun(id)
	r.Parent, r.ResetFrom, r.ResetKey = "", from, "3"
	b := store.Batch{Creates: []store.Run{r}}
	for _, o := range outs {
		b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: id, Outcome: o})
	}
	if len(outs) > 0 {
		b.Attempts = []store.RunAttempt{{RunID: id, Attempt: store.Attempt{Key: outs[0].Key, N: 1, Start: 5, End: 6}}}
	}
	return store.Reset{From: from, Batch: b}
}

// testResetRun: ResetRun creates the new run with its journal, attempts
// and links, marks the run reset (linked, lease released, history
// stamped, write-once from then on, not due), in one transaction; an
// unknown run, a run reset already or continued, a taken id and a batch
// of other writes are refused and leave no trace; an ended (completed)
// run can be reset, its result kept.
func testResetRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	createPending(t, s, "orig")
	c, err := s.ClaimRun(ctx, "orig", "w1", 1_000, leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, store.Batch{Fence: &c.Lease, Outcomes: []store.RunOutcome{
		{RunID: "orig", Outcome: settledOK("1", 1, `"a"`)}, {RunID: "orig", Outcome: settledOK("2", 2, `"b"`)}}})
	if _, err := s.ResetRun(ctx, resetOf("nope", "nope~reset-1")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reset of an unknown run: %v, want ErrNotFound", err)
	}
	bad := resetOf("orig", "orig~reset-1", settledOK("1", 1, `"a"`))
	bad.Batch.Runs = []store.Run{mustRun(t, s, "orig")}
	if _, err := s.ResetRun(ctx, bad); err == nil {
		t.Error("reset with a run update in its batch: no error")
	}
	taken := testRun("taken")
	taken.Status = store.RunCompleted
	mustCreateRun(t, s, taken)
	if _, err := s.ResetRun(ctx, resetOf("orig", "taken", settledOK("1", 1, `"a"`))); !errors.Is(err, store.ErrConflict) {
		t.Errorf("reset onto a taken id: %v, want ErrConflict", err)
	}
	if got := mustRun(t, s, "orig"); got.Status != store.RunPending || got.ResetTo != "" || got.LeaseOwner != "w1" {
		t.Fatalf("after refused resets, the run is %s, reset to %q, lease %q; want it unchanged", got.Status, got.ResetTo, got.LeaseOwner)
	}
	got, err := s.ResetRun(ctx, resetOf("orig", "orig~reset-1", settledOK("1", 1, `"a"`)))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "orig~reset-1" || got.Status != store.RunPending || got.ResetFrom != "orig" || got.ResetKey != "3" || got.LeaseOwner != "" {
		t.Errorf("new run = %+v, want pending, reset from orig at 3, no lease", got)
	}
	checkResetMarks(t, s)
	// The new run's journal and attempts.
	outs, err := s.Outcomes(ctx, "orig~reset-1")
	if err != nil || len(outs) != 1 || outs[0].Key != "1" || string(outs[0].Value) != `"a"` {
		t.Errorf("new run's journal = %+v, %v; want the one record 1", outs, err)
	}
	if as, err := s.Attempts(ctx, "orig~reset-1"); err != nil || len(as) != 1 || as[0].Key != "1" {
		t.Errorf("new run's attempts = %+v, %v; want one of key 1", as, err)
	}
	// The reset run is write-once, its lease is gone, and it is reset once.
	if err := s.Commit(ctx, store.Batch{Fence: &c.Lease, Outcomes: []store.RunOutcome{{RunID: "orig", Outcome: settledOK("3", 3, `"c"`)}}}); err == nil {
		t.Error("a commit under the reset run's old lease: no error")
	}
	if _, err := s.ResetRun(ctx, resetOf("orig", "orig~reset-2")); !errors.Is(err, store.ErrResetRefused) || !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second reset of the run: %v, want ErrResetRefused", err)
	}
	// An ended run resets, its result kept.
	done := testRun("done")
	done.Status, done.Result = store.RunCompleted, []byte(`7`)
	mustCreateRun(t, s, done)
	if _, err := s.ResetRun(ctx, resetOf("done", "done~reset-1")); err != nil {
		t.Fatalf("reset of a completed run: %v", err)
	}
	if got := mustRun(t, s, "done"); got.Status != store.RunReset || string(got.Result) != `7` || got.ResetTo != "done~reset-1" {
		t.Errorf("completed run after its reset: %s, result %s, reset to %q", got.Status, got.Result, got.ResetTo)
	}
	upd := mustRun(t, s, "done")
	upd.Status = store.RunCompleted
	if err := s.Commit(ctx, store.Batch{Runs: []store.Run{upd}}); !errors.Is(err, store.ErrImmutable) {
		t.Errorf("a reset run updated back to completed: %v, want ErrImmutable", err)
	}
}

// checkResetMarks checks run orig of testResetRun after its reset: reset
// as orig~reset-1, the lease released (and stamped in the history), not
// due.
func checkResetMarks(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	old := mustRun(t, s, "orig")
	if old.Status != store.RunReset || old.ResetTo != "orig~reset-1" || old.LeaseOwner != "" || !old.Status.Terminal() {
		t.Errorf("reset run = %s, reset to %q, lease %q; want reset to orig~reset-1, released", old.Status, old.ResetTo, old.LeaseOwner)
	}
	if h, err := s.LeaseHistory(ctx, "orig"); err != nil || len(h) != 1 || h[0].ReleasedAt == 0 {
		t.Errorf("lease history of the reset run = %+v, %v; want its claim released", h, err)
	}
	due, err := s.DueRuns(ctx, 1<<62, 0)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(due, func(r store.Run) bool { return r.ID == "orig" }) {
		t.Error("the reset run is due")
	}
	if !slices.ContainsFunc(due, func(r store.Run) bool { return r.ID == "orig~reset-1" }) {
		t.Error("the new run is not due")
	}
}
