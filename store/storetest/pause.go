package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/store"
)

// testPauseRun: PauseRun records who, why and when, keeps the run's
// status, keeps the first pause when called again, is kept by run
// updates, refuses an ended or unknown run; UnpauseRun clears it.
func testPauseRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := testRun("run-1")
	mustCreateRun(t, s, r)
	got, err := s.PauseRun(ctx, "run-1", "ops", "bad deploy", 5_000)
	if err != nil {
		t.Fatalf("PauseRun: %v", err)
	}
	want := store.Pause{By: "ops", Reason: "bad deploy", At: 5_000}
	if got.Paused != want || got.Status != store.RunPending || !got.IsPaused() {
		t.Errorf("PauseRun = %+v (status %s), want %+v, still pending", got.Paused, got.Status, want)
	}
	if got, err := s.PauseRun(ctx, "run-1", "other", "again", 6_000); err != nil || got.Paused != want {
		t.Errorf("second PauseRun = %+v, %v; want the first pause %+v kept", got.Paused, err, want)
	}
	// A run update (a worker committing progress) keeps the pause.
	r.Status = store.RunSuspended
	mustCommit(t, s, store.Batch{Runs: []store.Run{r}})
	if got := mustRun(t, s, "run-1"); got.Paused != want || got.Status != store.RunSuspended {
		t.Errorf("after a run update: %+v (status %s), want %+v, suspended", got.Paused, got.Status, want)
	}
	if rs, err := s.Runs(ctx, store.RunFilter{}); err != nil || len(rs) != 1 || rs[0].Paused != want {
		t.Errorf("Runs = %+v, %v; want the pause listed", rs, err)
	}
	got, err = s.UnpauseRun(ctx, "run-1")
	if err != nil || got.IsPaused() || got.Status != store.RunSuspended || mustRun(t, s, "run-1").IsPaused() {
		t.Errorf("UnpauseRun = %+v, %v; want the pause cleared, still suspended", got, err)
	}
	if got, err := s.UnpauseRun(ctx, "run-1"); err != nil || got.IsPaused() {
		t.Errorf("UnpauseRun of a run not paused = %+v, %v; want it unchanged", got.Paused, err)
	}
	done := testRun("run-2")
	mustCreateRun(t, s, done)
	done.Status, done.Result = store.RunCompleted, []byte(`1`)
	mustCommit(t, s, store.Batch{Runs: []store.Run{done}})
	_, err = s.PauseRun(ctx, "run-2", "ops", "late", 5_000)
	if !errors.Is(err, store.ErrEnded) || !strings.Contains(err.Error(), "run-2 is completed") {
		t.Errorf("PauseRun of a completed run: %v, want ErrEnded naming the run and its status", err)
	}
	if mustRun(t, s, "run-2").IsPaused() {
		t.Errorf("PauseRun of a completed run paused it")
	}
	for _, f := range []func() error{
		func() error { _, err := s.PauseRun(ctx, "ghost", "ops", "x", 1); return err },
		func() error { _, err := s.UnpauseRun(ctx, "ghost"); return err },
	} {
		if err := f(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("pause or unpause of an unknown run: %v, want ErrNotFound", err)
		}
	}
	if _, err := s.PauseRun(ctx, "run-1", "", "x", 1); err == nil {
		t.Errorf("PauseRun without who succeeded")
	}
	if _, err := s.PauseRun(ctx, "run-1", "ops", "x", 0); err == nil {
		t.Errorf("PauseRun at time 0 succeeded")
	}
}

// testPauseNotDue: a paused run is neither due nor claimed (ClaimRuns
// skips it, ClaimRun refuses it with a *PausedError), whatever made it
// due; a settlement made while it is paused is stored, and it is due
// again once unpaused.
func testPauseNotDue(t *testing.T, s store.Store) {
	ctx := t.Context()
	const now = 1_000
	createPending(t, s, "a-pending")
	r := testRun("b-timer")
	mustCreateRun(t, s, r)
	r.Status, r.WakeAt = store.RunSuspended, now-1
	mustCommit(t, s, store.Batch{Runs: []store.Run{r}})
	r = testRun("c-promise")
	mustCreateRun(t, s, r)
	r.Status = store.RunSuspended
	mustCommit(t, s, store.Batch{Runs: []store.Run{r}})
	pendingPromise(t, s, "c-promise", "p")
	all := []string{"a-pending", "b-timer", "c-promise"}
	for _, id := range all {
		if _, err := s.PauseRun(ctx, id, "ops", "hold", 10); err != nil {
			t.Fatalf("PauseRun(%s): %v", id, err)
		}
	}
	if err := s.Settle(ctx, store.Settlement{RunID: "c-promise", Key: "p", Status: store.OutcomeOK, Value: []byte("1")}); err != nil {
		t.Fatalf("Settle of a paused run's promise: %v", err)
	}
	if sets, err := s.Settlements(ctx, "c-promise"); err != nil || len(sets) != 1 {
		t.Errorf("Settlements of the paused run = %+v, %v; want the one stored", sets, err)
	}
	if rs, err := s.DueRuns(ctx, now, 0); err != nil || len(rs) != 0 {
		t.Errorf("DueRuns with every run paused = %q, %v; want none", runIDs(rs), err)
	}
	if cs := mustClaim(t, s, "w1", now, 0); len(cs) != 0 {
		t.Errorf("ClaimRuns took paused runs %q", claimedIDs(cs))
	}
	_, err := s.ClaimRun(ctx, "a-pending", "w1", now, leaseTTL)
	var pe *store.PausedError
	if !errors.Is(err, store.ErrPaused) || !errors.As(err, &pe) || pe.Pause.By != "ops" || pe.RunID != "a-pending" {
		t.Errorf("ClaimRun of a paused run: %v, want a PausedError naming the pause", err)
	}
	for _, id := range all {
		if _, err := s.UnpauseRun(ctx, id); err != nil {
			t.Fatalf("UnpauseRun(%s): %v", id, err)
		}
	}
	all = []string{"a-pending", "c-promise", "b-timer"} // by WakeAt, then ID
	if rs, err := s.DueRuns(ctx, now, 0); err != nil || !slices.Equal(runIDs(rs), all) {
		t.Errorf("DueRuns after unpausing = %q, %v; want %q", runIDs(rs), err, all)
	}
	if cs := mustClaim(t, s, "w1", now, 0); !slices.Equal(claimedIDs(cs), all) {
		t.Errorf("ClaimRuns after unpausing took %q, want %q", claimedIDs(cs), all)
	}
}
