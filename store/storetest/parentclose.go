package storetest

import (
	"slices"
	"testing"

	"github.com/skeinrun/skein/store"
)

// testParentEnded: a run's policy for its parent's end (ParentClose) is
// stored at creation, by CreateRun and by a batch's Creates; a batch's
// ParentEnded requests the cancellation of a child run not ended (one
// requested before keeps its reason; a suspended child becomes due) or
// marks it abandoned, and leaves an ended or unknown child as it is; run
// updates keep both fields.
func testParentEnded(t *testing.T, s store.Store) {
	ctx := t.Context()
	child := func(id string, st store.RunStatus, pc store.ParentClose) store.Run {
		r := testRun(id)
		r.Parent, r.Status, r.ParentClose = "p", st, pc
		return r
	}
	mustCreateRun(t, s, testRun("p"))
	mustCreateRun(t, s, child("p.1", store.RunSuspended, ""))
	mustCreateRun(t, s, child("p.2", store.RunCompleted, store.ParentCloseCancel))
	mustCreateRun(t, s, child("p.3", store.RunRunning, store.ParentCloseCancel))
	mustCommit(t, s, store.Batch{Creates: []store.Run{child("p.4", store.RunRunning, store.ParentCloseAbandon), child("p.5", store.RunCompleted, store.ParentCloseAbandon)}})
	if got := mustRun(t, s, "p.4"); got.ParentClose != store.ParentCloseAbandon || got.Abandoned {
		t.Fatalf("p.4 as created: parent close %q, abandoned %v; want abandon, false", got.ParentClose, got.Abandoned)
	}
	if _, err := s.RequestCancel(ctx, "p.3", "first"); err != nil {
		t.Fatal(err)
	}
	ended := mustRun(t, s, "p")
	ended.Status = store.RunCompleted
	reason := "parent run p ended (completed)"
	mustCommit(t, s, store.Batch{Runs: []store.Run{ended}, ParentEnded: []store.ParentEnd{
		{RunID: "p.1", Reason: reason}, {RunID: "p.2", Reason: reason}, {RunID: "p.3", Reason: reason},
		{RunID: "p.4", Abandon: true}, {RunID: "p.5", Abandon: true}, {RunID: "p.unknown", Reason: reason},
	}})
	want := map[string]struct {
		cancel    string
		abandoned bool
	}{"p.1": {reason, false}, "p.2": {"", false}, "p.3": {"first", false}, "p.4": {"", true}, "p.5": {"", false}}
	for id, w := range want {
		if got := mustRun(t, s, id); got.Cancel != w.cancel || got.Abandoned != w.abandoned {
			t.Errorf("%s after its parent ended: cancel %q, abandoned %v; want %q, %v", id, got.Cancel, got.Abandoned, w.cancel, w.abandoned)
		}
	}
	due, err := s.DueRuns(ctx, 1_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(runIDs(due), "p.1") {
		t.Errorf("DueRuns = %q: the suspended child whose parent ended is not due", runIDs(due))
	}
	// A run update (the child's own commit) keeps the policy and the mark.
	u := mustRun(t, s, "p.4")
	u.Status, u.Result, u.ParentClose, u.Abandoned = store.RunCompleted, []byte(`1`), "", false
	mustCommit(t, s, store.Batch{Runs: []store.Run{u}})
	if got := mustRun(t, s, "p.4"); got.ParentClose != store.ParentCloseAbandon || !got.Abandoned || got.Status != store.RunCompleted {
		t.Errorf("p.4 after its own end: parent close %q, abandoned %v, %s; want abandon, true, completed", got.ParentClose, got.Abandoned, got.Status)
	}
}
