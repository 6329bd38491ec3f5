package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/store"
)

// The retention cases of the suite (store.PruneStore): which ended runs
// PruneRuns and DeleteRun delete, and that everything of a run goes
// with it.

// pruneHorizon is the horizon of the cases: runs ended at ts(10) or
// later are recent.
var pruneHorizon = ts(10).UnixNano()

// endedRun creates run id (parent: its parent run, or "") and, for a
// status that is not live, ends it at ts(end) with an outcome, an
// attempt, a settlement, a lease and an activity task, so that a
// delete must take all of them.
func endedRun(t *testing.T, s store.Store, id, parent string, status store.RunStatus, end int64) {
	t.Helper()
	r := testRun(id)
	r.Parent, r.Status, r.CreatedAt, r.UpdatedAt = parent, store.RunRunning, ts(0), ts(0)
	mustCreateRun(t, s, r)
	mustClaimOne(t, s, "w1", ts(0).UnixNano(), id)
	upd := store.Run{ID: id, ModuleHash: r.ModuleHash, Status: status, UpdatedAt: ts(end)}
	if !status.Terminal() {
		upd.Status = store.RunSuspended
	}
	mustCommit(t, s, store.Batch{
		Outcomes: []store.RunOutcome{
			{RunID: id, Outcome: store.Outcome{Key: "1", Kind: "step", Function: "f", Status: store.OutcomeOK, Value: []byte("1"), Seq: 1}},
			{RunID: id, Outcome: store.Outcome{Key: "2", Kind: "promise", Function: "promise", Status: store.OutcomePending}},
		},
		Settlements: []store.Settlement{{RunID: id, Key: "2", Status: store.OutcomeOK, Value: []byte("2"), CreatedAt: ts(0)}},
		Attempts:    []store.RunAttempt{{RunID: id, Attempt: store.Attempt{Key: "1", N: 1, Start: 1, End: 2}}},
		Tasks:       []store.Task{{RunID: id, Key: "3", Name: "act", Attempt: 1}},
		Runs:        []store.Run{upd},
	})
}

// mustPrune prunes at the horizon and checks the runs it names.
func mustPrune(t *testing.T, s store.Store, limit int, dryRun bool, want ...string) store.PruneResult {
	t.Helper()
	res, err := s.PruneRuns(t.Context(), "", pruneHorizon, limit, dryRun)
	if err != nil {
		t.Fatalf("PruneRuns(limit %d, dry run %v): %v", limit, dryRun, err)
	}
	got := slices.Clone(res.IDs)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("PruneRuns(limit %d, dry run %v) = %q, want %q", limit, dryRun, res.IDs, want)
	}
	return res
}

// checkGone checks that run id and everything of it are gone (or, with
// kept, are all there).
func checkGone(t *testing.T, s store.Store, id string, gone bool) {
	t.Helper()
	ctx := t.Context()
	_, err := s.Run(ctx, id)
	os, _ := s.Outcomes(ctx, id)
	as, _ := s.Attempts(ctx, id)
	ls, _ := s.LeaseHistory(ctx, id)
	ts, _ := s.Tasks(ctx, id)
	if gone && (!errors.Is(err, store.ErrNotFound) || len(os)+len(as)+len(ls)+len(ts) != 0) {
		t.Errorf("run %s after its delete: Run error %v, %d outcomes, %d attempts, %d leases, %d tasks; want not found and none",
			id, err, len(os), len(as), len(ls), len(ts))
	}
	if !gone && (err != nil || len(os) != 2 || len(as) != 1 || len(ls) != 1 || len(ts) != 1) {
		t.Errorf("run %s kept: Run error %v, %d outcomes, %d attempts, %d leases, %d tasks; want all of it",
			id, err, len(os), len(as), len(ls), len(ts))
	}
}

func testPruneRuns(t *testing.T, s store.Store) {
	endedRun(t, s, "old-done", "", store.RunCompleted, 1)
	endedRun(t, s, "old-failed", "", store.RunFailed, 2)
	endedRun(t, s, "old-canceled", "", store.RunCanceled, 3)
	endedRun(t, s, "recent", "", store.RunCompleted, 10)
	endedRun(t, s, "live", "", store.RunSuspended, 1)
	endedRun(t, s, "diverged", "", store.RunDiverged, 1)
	dry := mustPrune(t, s, 0, true, "old-done", "old-failed", "old-canceled")
	for _, id := range []string{"old-done", "old-failed", "old-canceled", "recent", "live", "diverged"} {
		checkGone(t, s, id, false)
	}
	res := mustPrune(t, s, 0, false, "old-done", "old-failed", "old-canceled")
	if !slices.Equal(res.IDs, dry.IDs) || res.More {
		t.Errorf("PruneRuns = %+v after a dry run of %+v: want the same runs, no more", res, dry)
	}
	for _, id := range []string{"old-done", "old-failed", "old-canceled"} {
		checkGone(t, s, id, true)
	}
	for _, id := range []string{"recent", "live", "diverged"} {
		checkGone(t, s, id, false)
	}
	if settled, err := s.Settlements(t.Context(), "live"); err != nil || len(settled) != 1 {
		t.Errorf("Settlements(live) = %v, %v; want its one settlement", settled, err)
	}
	mustPrune(t, s, 0, false) // a second prune is a no-op
}

func testPruneBatches(t *testing.T, s store.Store) {
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		endedRun(t, s, id, "", store.RunCompleted, 1)
	}
	endedRun(t, s, "f", "", store.RunFailed, 0)
	// By status (completed first), then end, then id.
	if res := mustPrune(t, s, 2, true, "a", "b"); !res.More || !slices.Equal(res.IDs, []string{"a", "b"}) {
		t.Errorf("PruneRuns(limit 2, dry run) = %+v, want a, b and more", res)
	}
	mustPrune(t, s, 2, false, "a", "b")
	mustPrune(t, s, 2, false, "c", "d")
	if res := mustPrune(t, s, 3, false, "e", "f"); res.More {
		t.Errorf("PruneRuns(limit 3) of the last 2 runs = %+v, want no more", res)
	}
}

func testPruneFamilies(t *testing.T, s store.Store) {
	// A live parent keeps its ended child; a live child keeps its ended
	// parent; an ended family goes.
	endedRun(t, s, "p1", "", store.RunSuspended, 1)
	endedRun(t, s, "p1.c", "p1", store.RunCompleted, 1)
	endedRun(t, s, "p2", "", store.RunCompleted, 1)
	endedRun(t, s, "p2.c", "p2", store.RunRunning, 1)
	endedRun(t, s, "p3", "", store.RunCompleted, 2)
	endedRun(t, s, "p3.c", "p3", store.RunCompleted, 1)
	// A chain whose end is live is kept whole; one whose end is recent
	// too; an ended chain goes whole.
	endedRun(t, s, "k", "", store.RunContinued, 1)
	endedRun(t, s, "k~2", "", store.RunContinued, 2)
	endedRun(t, s, "k~3", "", store.RunSuspended, 3)
	endedRun(t, s, "m", "", store.RunContinued, 1)
	endedRun(t, s, "m~2", "", store.RunCompleted, 10)
	endedRun(t, s, "n", "", store.RunContinued, 1)
	endedRun(t, s, "n~2", "", store.RunContinued, 2)
	endedRun(t, s, "n~10", "", store.RunCompleted, 3)
	endedRun(t, s, "n~2.c", "n~2", store.RunCompleted, 3) // a child of a link: a chain of its own
	gone := []string{"p3", "p3.c", "n", "n~2", "n~10", "n~2.c"}
	mustPrune(t, s, 0, true, gone...)
	// A batch takes whole chains: n's three runs come with n~2.c's first.
	if res := mustPrune(t, s, 2, false, "p3.c", "p3"); !res.More {
		t.Errorf("PruneRuns(limit 2) = %+v, want more", res)
	}
	mustPrune(t, s, 2, false, "n", "n~2", "n~10")
	mustPrune(t, s, 0, false, "n~2.c")
	for _, id := range gone {
		checkGone(t, s, id, true)
	}
	for _, id := range []string{"p1", "p1.c", "p2", "p2.c", "k", "k~2", "k~3", "m", "m~2"} {
		checkGone(t, s, id, false)
	}
}

func testDeleteRun(t *testing.T, s store.Store) {
	endedRun(t, s, "p", "", store.RunSuspended, 1)
	endedRun(t, s, "p.c", "p", store.RunCompleted, 1)
	endedRun(t, s, "q", "", store.RunCompleted, 1)
	endedRun(t, s, "q.c", "q", store.RunSuspended, 1)
	endedRun(t, s, "k", "", store.RunContinued, 1)
	endedRun(t, s, "k~2", "", store.RunRunning, 1)
	endedRun(t, s, "done", "", store.RunCompleted, 20) // no horizon: a recent run may go
	for id, rule := range map[string]string{
		"p":   "it has not ended (status suspended)",
		"p.c": "its parent run p has not ended",
		"q":   "its child run q.c has not ended",
		"k":   "the last run of its continue-as-new chain, k~2, has not ended",
	} {
		err := s.DeleteRun(t.Context(), id)
		var kept *store.KeptError
		if !errors.As(err, &kept) || !errors.Is(err, store.ErrRunNeeded) || !strings.Contains(err.Error(), rule) {
			t.Errorf("DeleteRun(%s) = %v, want a *KeptError naming the rule %q", id, err, rule)
		}
		checkGone(t, s, id, false)
	}
	if err := s.DeleteRun(t.Context(), "done"); err != nil {
		t.Fatalf("DeleteRun(done): %v", err)
	}
	checkGone(t, s, "done", true)
	if err := s.DeleteRun(t.Context(), "done"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteRun(done) again = %v, want ErrNotFound", err)
	}
	// Deleting ends nothing else: the other runs are as they were.
	if r := mustRun(t, s, "q.c"); r.Status != store.RunSuspended || !r.UpdatedAt.Equal(ts(1)) {
		t.Errorf("run q.c after the deletes: %+v", r)
	}
}

func testPruneScheduleSlot(t *testing.T, s store.Store) {
	sc := testSchedule("tick")
	sc.LastFired = ts(2).UnixNano()
	if _, err := s.CreateSchedule(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	older, latest := store.ScheduleRunID("tick", ts(1)), store.ScheduleRunID("tick", ts(2))
	endedRun(t, s, older, "", store.RunCompleted, 1)
	endedRun(t, s, latest, "", store.RunContinued, 2)
	endedRun(t, s, latest+"~2", "", store.RunCompleted, 3)
	// The latest slot's run, and its chain, stay: the scheduler would
	// start a missing one again.
	mustPrune(t, s, 0, false, older)
	for _, id := range []string{latest, latest + "~2"} {
		err := s.DeleteRun(t.Context(), id)
		if !errors.Is(err, store.ErrRunNeeded) || !strings.Contains(err.Error(), "schedule tick's latest slot") {
			t.Errorf("DeleteRun(%s) = %v, want it kept as the run of schedule tick's latest slot", id, err)
		}
		checkGone(t, s, id, false)
	}
}
