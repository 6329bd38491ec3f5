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

// testDueRunsTransitions follows runs through the writes that change
// whether something waits for them, checking DueRuns after each: a
// settlement made while the run executes makes it due once it suspends;
// delivering it (the outcome recorded) makes it not due; a child's
// result (a batch settlement) makes a suspended parent due; a run that
// resumes and ends is never due again; a limit counts every kind of due
// run in one order.
func testDueRunsTransitions(t *testing.T, s store.Store) {
	ctx := t.Context()
	const now = 1_000
	due := func(want ...string) {
		t.Helper()
		rs, err := s.DueRuns(ctx, now, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := runIDs(rs); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("DueRuns = %q, want %q", got, want)
		}
	}
	set := func(id string, status store.RunStatus, wake int64, outs ...store.Outcome) {
		t.Helper()
		r := mustRun(t, s, id)
		r.Status, r.WakeAt = status, wake
		b := store.Batch{Runs: []store.Run{r}}
		for _, o := range outs {
			b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: id, Outcome: o})
		}
		mustCommit(t, s, b)
	}
	delivered := func(key string) store.Outcome {
		return store.Outcome{Key: key, Kind: "promise", Function: "promise", Status: store.OutcomeOK, Value: []byte(`1`), Seq: 1, UpdatedAt: ts(4)}
	}

	// Settled while running: not due as suspended with a later timer...
	mustCreateRun(t, s, testRun("a"))
	set("a", store.RunRunning, 0)
	pendingPromise(t, s, "a", "p")
	if err := s.Settle(ctx, store.Settlement{RunID: "a", Key: "p", Status: store.OutcomeOK, Value: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	due("a") // running
	// ...until it suspends with the settlement undelivered: due.
	set("a", store.RunSuspended, now+500)
	due("a")
	// Delivered and suspended again on the timer: not due.
	set("a", store.RunRunning, 0, delivered("p"))
	set("a", store.RunSuspended, now+500)
	due()

	// A child's result reaches its suspended parent in the child's last
	// batch: the parent is due.
	mustCreateRun(t, s, testRun("b"))
	mustCreateRun(t, s, testRun("b.1"))
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{{RunID: "b", Outcome: store.Outcome{
		Key: "1", Kind: "child", Function: "w", Status: store.OutcomePending, UpdatedAt: ts(3)}}}})
	set("b", store.RunSuspended, 0)
	due("b.1") // the child is pending
	child := mustRun(t, s, "b.1")
	child.Status, child.Result = store.RunCompleted, []byte(`2`)
	mustCommit(t, s, store.Batch{Runs: []store.Run{child},
		Settlements: []store.Settlement{{RunID: "b", Key: "1", Status: store.OutcomeOK, Value: []byte(`2`)}}})
	due("b")
	// The parent resumes, takes the result and ends: never due again.
	set("b", store.RunRunning, 0, store.Outcome{Key: "1", Kind: "child", Function: "w", Status: store.OutcomeOK, Value: []byte(`2`), Seq: 1, UpdatedAt: ts(4)})
	set("b", store.RunCompleted, 0)
	due()

	// A cancellation of a suspended run, then its delivery with the
	// run's suspension in the same batch.
	mustCreateRun(t, s, testRun("c"))
	set("c", store.RunSuspended, now+10)
	if _, err := s.RequestCancel(ctx, "c", "stop"); err != nil {
		t.Fatal(err)
	}
	due("c")
	set("c", store.RunSuspended, now+10, store.Outcome{Key: store.CancelKey, Kind: "cancel", Function: "cancel", Status: store.OutcomeError, Error: "stop", Seq: 1, UpdatedAt: ts(4)})
	due()

	// Every kind at once, in WakeAt-then-ID order, and a limit across them.
	mustCreateRun(t, s, testRun("d-pending"))
	mustCreateRun(t, s, testRun("e-timer"))
	set("e-timer", store.RunSuspended, now-5)
	mustCreateRun(t, s, testRun("f-waiting"))
	set("f-waiting", store.RunSuspended, now+99)
	pendingPromise(t, s, "f-waiting", "p")
	if err := s.Settle(ctx, store.Settlement{RunID: "f-waiting", Key: "p", Status: store.OutcomeOK, Value: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	dl := testRun("g-deadline")
	dl.Deadline = now - 1
	mustCreateRun(t, s, dl)
	set("g-deadline", store.RunSuspended, now+50)
	due("d-pending", "e-timer", "g-deadline", "f-waiting")
	rs, err := s.DueRuns(ctx, now, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := runIDs(rs); !slices.Equal(got, []string{"d-pending", "e-timer"}) {
		t.Errorf("DueRuns(limit 2) = %q, want [d-pending e-timer]", got)
	}
	cs, err := s.ClaimRuns(ctx, "w1", now, time.Minute, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := claimedIDs(cs); !slices.Equal(got, []string{"d-pending", "e-timer", "g-deadline"}) {
		t.Errorf("ClaimRuns(limit 3) = %q, want [d-pending e-timer g-deadline]", got)
	}
}

// testSettleRacesSuspend: a settlement made (Settle, or a child's last
// batch) while the run's own execution commits its suspension, in
// parallel, always leaves the run due: neither write may miss the other.
// In a third of the runs the suspending batch itself records the pending
// op the child's result settles (a parent flushes an op's record at its
// next idle point, by when the child may have ended).
func testSettleRacesSuspend(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 60
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("r%02d", i)
		mustCreateRun(t, s, testRun(id))
		pending := store.Outcome{Key: "p", Kind: "promise", Function: "promise", Status: store.OutcomePending, UpdatedAt: ts(3)}
		running := mustRun(t, s, id)
		running.Status = store.RunRunning
		b := store.Batch{Runs: []store.Run{running}}
		if i%3 != 2 {
			b.Outcomes = []store.RunOutcome{{RunID: id, Outcome: pending}}
		}
		mustCommit(t, s, b)
		suspend := store.Batch{Runs: []store.Run{running}}
		suspend.Runs[0].Status, suspend.Runs[0].WakeAt = store.RunSuspended, 1<<62
		if i%3 == 2 {
			suspend.Outcomes = []store.RunOutcome{{RunID: id, Outcome: pending}}
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := s.Commit(ctx, suspend); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			set := store.Settlement{RunID: id, Key: "p", Status: store.OutcomeOK, Value: []byte("1")}
			var err error
			if i%3 == 0 {
				err = s.Settle(ctx, set)
			} else {
				err = s.Commit(ctx, store.Batch{Settlements: []store.Settlement{set}})
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rs, err := s.DueRuns(ctx, 1_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := runIDs(rs); len(got) != n {
		t.Errorf("%d of %d runs due after a settlement raced their suspension: %q", len(got), n, got)
	}
}
