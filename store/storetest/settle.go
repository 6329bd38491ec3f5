package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/skeinrun/skein/store"
)

// pendingPromise commits a pending promise outcome at key.
func pendingPromise(t *testing.T, s store.Store, run, key string) {
	t.Helper()
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: run, Outcome: store.Outcome{
		Key: key, Kind: "promise", Function: "promise", Status: store.OutcomePending, UpdatedAt: ts(3)}}}})
}

func testSettleOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateRun(t, s, testRun("run-1"))
	pendingPromise(t, s, "run-1", "approve")
	first := store.Settlement{RunID: "run-1", Key: "approve", Status: store.OutcomeOK, Value: []byte(`"yes"`), CreatedAt: ts(4)}
	if err := s.Settle(ctx, first); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	second := store.Settlement{RunID: "run-1", Key: "approve", Status: store.OutcomeError, Error: "no", CreatedAt: ts(5)}
	if err := s.Settle(ctx, second); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second Settle = %v, want ErrConflict", err)
	}
	got, err := s.Settlements(ctx, "run-1")
	if err != nil {
		t.Fatalf("Settlements: %v", err)
	}
	if len(got) != 1 || got[0].Key != "approve" || got[0].Status != store.OutcomeOK ||
		string(got[0].Value) != `"yes"` || !got[0].CreatedAt.Equal(ts(4)) {
		t.Fatalf("Settlements = %+v, want the first settlement only", got)
	}
	// Once the run records the outcome, the promise is settled: a late
	// Settle conflicts and the settlement is no longer undelivered.
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "run-1", Outcome: store.Outcome{
		Key: "approve", Kind: "promise", Function: "promise", Status: store.OutcomeOK, Value: []byte(`"yes"`), Seq: 1}}}})
	if got, _ := s.Settlements(ctx, "run-1"); len(got) != 0 {
		t.Errorf("Settlements after delivery = %+v, want none", got)
	}
}

func testSettleUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateRun(t, s, testRun("run-1"))
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "run-1", Outcome: store.Outcome{
		Key: "1", Kind: "sleep", Function: "sleep", Status: store.OutcomePending, Deadline: 5}}}})
	pendingPromise(t, s, "run-1", "p")
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "run-1", Outcome: store.Outcome{
		Key: "p", Kind: "promise", Function: "promise", Status: store.OutcomeError, Error: "canceled", Seq: 1}}}})
	for _, tc := range []struct {
		run, key string
		want     error
	}{
		{"nope", "p", store.ErrNotFound},
		{"run-1", "missing", store.ErrNotFound},
		{"run-1", "1", store.ErrNotFound}, // a timer is not a promise
		{"run-1", "p", store.ErrConflict}, // settled by the run itself
	} {
		err := s.Settle(ctx, store.Settlement{RunID: tc.run, Key: tc.key, Status: store.OutcomeOK, Value: []byte("1")})
		if !errors.Is(err, tc.want) {
			t.Errorf("Settle(%s, %s) = %v, want %v", tc.run, tc.key, err, tc.want)
		}
	}
	if err := s.Settle(ctx, store.Settlement{RunID: "run-1", Key: "p", Status: "maybe"}); err == nil {
		t.Error("Settle with status maybe: no error")
	}
}

func testSettlementsUndelivered(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateRun(t, s, testRun("run-1"))
	mustCreateRun(t, s, testRun("run-2"))
	for _, k := range []string{"b", "a", "c"} {
		pendingPromise(t, s, "run-1", k)
	}
	pendingPromise(t, s, "run-2", "a")
	for i, k := range []string{"b", "a"} {
		if err := s.Settle(ctx, store.Settlement{RunID: "run-1", Key: k, Status: store.OutcomeOK, Value: []byte("1"), CreatedAt: ts(10 + int64(i))}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Settlements(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, g := range got {
		keys = append(keys, g.Key)
		if g.RunID != "run-1" {
			t.Errorf("settlement of %s listed for run-1", g.RunID)
		}
	}
	if !slices.Equal(keys, []string{"b", "a"}) {
		t.Errorf("Settlements keys = %q, want [b a] (oldest first)", keys)
	}
	if got, _ := s.Settlements(ctx, "run-2"); len(got) != 0 {
		t.Errorf("run-2 Settlements = %+v, want none", got)
	}
}

func testBatchSettlements(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateRun(t, s, testRun("parent"))
	child := testRun("parent.1")
	mustCreateRun(t, s, child)
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "parent", Outcome: store.Outcome{
		Key: "1", Kind: "child", Function: "sum", Status: store.OutcomePending}}}})
	child.Status, child.Result = store.RunCompleted, []byte("42")
	set := store.Settlement{RunID: "parent", Key: "1", Status: store.OutcomeOK, Value: []byte("42")}
	mustCommit(t, s, store.Batch{Runs: []store.Run{child}, Settlements: []store.Settlement{set}})
	// A second delivery of the same key is ignored, not an error.
	set.Value = []byte("43")
	mustCommit(t, s, store.Batch{Settlements: []store.Settlement{set}})
	got, err := s.Settlements(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0].Value) != "42" {
		t.Fatalf("Settlements = %+v, want the first (42)", got)
	}
	// A batch whose settlement names an unknown run fails as a whole.
	child.Error = "changed"
	err = s.Commit(ctx, store.Batch{Runs: []store.Run{child}, Settlements: []store.Settlement{{RunID: "ghost", Key: "1", Status: store.OutcomeOK}}})
	if err == nil {
		t.Fatal("Commit with a settlement of an unknown run: no error")
	}
	if r := mustRun(t, s, "parent.1"); r.Error == "changed" {
		t.Error("the failed batch's run update was applied")
	}
}

func testRequestCancel(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := testRun("run-1")
	mustCreateRun(t, s, r)
	got, err := s.RequestCancel(ctx, "run-1", "user asked")
	if err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	if got.Cancel != "user asked" {
		t.Errorf("Cancel = %q, want the reason", got.Cancel)
	}
	if got, _ := s.RequestCancel(ctx, "run-1", "again"); got.Cancel != "user asked" {
		t.Errorf("second RequestCancel changed the reason to %q", got.Cancel)
	}
	// A run update (a worker committing progress) keeps the request.
	r.Status = store.RunSuspended
	mustCommit(t, s, store.Batch{Runs: []store.Run{r}})
	if got := mustRun(t, s, "run-1"); got.Cancel != "user asked" {
		t.Errorf("after a run update Cancel = %q", got.Cancel)
	}
	done := testRun("run-2")
	mustCreateRun(t, s, done)
	done.Status = store.RunCompleted
	mustCommit(t, s, store.Batch{Runs: []store.Run{done}})
	if got, err := s.RequestCancel(ctx, "run-2", "late"); err != nil || got.Cancel != "" || got.Status != store.RunCompleted {
		t.Errorf("RequestCancel of a completed run = %+v, %v; want it unchanged", got, err)
	}
	if _, err := s.RequestCancel(ctx, "ghost", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RequestCancel(ghost) = %v, want ErrNotFound", err)
	}
}

func testDueRunsWake(t *testing.T, s store.Store) {
	ctx := t.Context()
	const now = 1_000
	mk := func(id string, deadline int64) store.Run {
		r := testRun(id)
		r.Deadline = deadline
		mustCreateRun(t, s, r)
		r.Status = store.RunSuspended
		mustCommit(t, s, store.Batch{Runs: []store.Run{r}})
		return r
	}
	mk("a-settled", 0)
	pendingPromise(t, s, "a-settled", "p")
	if err := s.Settle(ctx, store.Settlement{RunID: "a-settled", Key: "p", Status: store.OutcomeOK, Value: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	mk("b-waiting", 0)
	pendingPromise(t, s, "b-waiting", "p")
	mk("c-cancel", 0)
	if _, err := s.RequestCancel(ctx, "c-cancel", "stop"); err != nil {
		t.Fatal(err)
	}
	mk("d-cancel-delivered", 0)
	if _, err := s.RequestCancel(ctx, "d-cancel-delivered", "stop"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "d-cancel-delivered", Outcome: store.Outcome{
		Key: store.CancelKey, Kind: "cancel", Function: "cancel", Status: store.OutcomeError, Error: "stop", Seq: 1}}}})
	mk("e-deadline", now-1)
	mk("f-deadline-later", now+1)
	rs, err := s.DueRuns(ctx, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a-settled", "c-cancel", "e-deadline"}
	if got := runIDs(rs); !slices.Equal(got, want) {
		t.Errorf("DueRuns = %q, want %q", got, want)
	}
	if r := mustRun(t, s, "e-deadline"); r.Deadline != now-1 {
		t.Errorf("Deadline = %d, want %d", r.Deadline, now-1)
	}
}

func testPendingNeverReplacesSettled(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("run-1"))
	o := store.Outcome{Key: "1", Kind: "call", Function: "charge", Status: store.OutcomePending, Attempts: 1}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "run-1", Outcome: o}}})
	o.Attempts = 3
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "run-1", Outcome: o}}})
	o.Attempts = 2 // a late, lower counter: attempts never go down
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "run-1", Outcome: o}}})
	if got := mustOutcomes(t, s, "run-1"); len(got) != 1 || got[0].Attempts != 3 {
		t.Fatalf("after attempt updates: %+v, want attempts 3", got)
	}
	settled := o
	settled.Status, settled.Value, settled.Seq, settled.Attempts = store.OutcomeOK, []byte(`"ok"`), 1, 3
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "run-1", Outcome: settled}}})
	o.Attempts = 4
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "run-1", Outcome: o}}})
	got := mustOutcomes(t, s, "run-1")
	if len(got) != 1 || got[0].Status != store.OutcomeOK || string(got[0].Value) != `"ok"` || got[0].Seq != 1 {
		t.Fatalf("a pending row replaced the settled outcome: %+v", got)
	}
}
