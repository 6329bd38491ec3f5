package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/skeinrun/skein/store"
)

// wantImmutable fails unless err wraps store.ErrImmutable and its text
// names every one of names.
func wantImmutable(t *testing.T, what string, err error, names ...string) {
	t.Helper()
	if !errors.Is(err, store.ErrImmutable) {
		t.Errorf("%s: error %v, want store.ErrImmutable", what, err)
		return
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("%s: error %q does not name %q", what, err, n)
		}
	}
}

// settledOK is a settled step outcome at key with value v.
func settledOK(key string, seq int64, v string) store.Outcome {
	return store.Outcome{Key: key, Kind: "step", Function: "draw", Status: store.OutcomeOK, Value: []byte(v),
		Attempts: 1, Seq: seq, VTime: 10, UpdatedAt: ts(3)}
}

// testWriteOnceOutcome: a settled outcome never changes its status,
// value, error, kind or function; a batch that tries fails as a whole
// with ErrImmutable naming the run and key. Writing it again unchanged
// (the journal renumbered, the orphaned flag, a higher attempt count) is
// allowed, and so is a pending write over it (skipped).
func testWriteOnceOutcome(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("wo-1"))
	a := settledOK("t0.1", 1, `"first"`)
	nilValue := store.Outcome{Key: "t0.2", Kind: "step", Function: "f", Status: store.OutcomeOK, Seq: 2, UpdatedAt: ts(3)}
	failed := store.Outcome{Key: "t0.3", Kind: "call", Function: "charge", Status: store.OutcomeError, Error: "declined", Seq: 3, UpdatedAt: ts(3)}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("wo-1", a), ro("wo-1", nilValue), ro("wo-1", failed)}})

	// Legitimate rewrites: renumbered, orphaned, more attempts, an empty
	// value for a nil one, and a pending write (skipped).
	again := a
	again.Seq, again.Orphaned, again.Attempts, again.UpdatedAt = 7, true, 3, ts(4)
	empty := nilValue
	empty.Value, empty.Seq = []byte{}, 8
	late := store.Outcome{Key: "t0.3", Kind: "call", Function: "charge", Status: store.OutcomePending, Attempts: 2, UpdatedAt: ts(5)}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("wo-1", again), ro("wo-1", empty), ro("wo-1", late)}})
	got := mustOutcomes(t, s, "wo-1")
	if len(got) != 3 {
		t.Fatalf("outcomes: %d, want 3: %+v", len(got), got)
	}
	checkOutcome(t, got[0], failed) // seq 3, then 7 and 8
	checkOutcome(t, got[1], again)
	if got[2].Key != "t0.2" || got[2].Seq != 8 || len(got[2].Value) != 0 {
		t.Errorf("outcome t0.2 after an unchanged rewrite: %+v", got[2])
	}

	// Changes of a settled outcome, each with an innocent write in its
	// batch that must not be applied either.
	innocent := ro("wo-1", settledOK("t0.9", 9, `"new"`))
	for _, c := range []struct {
		what string
		o    store.Outcome
	}{
		{"another value", func() store.Outcome { o := again; o.Value = []byte(`"second"`); return o }()},
		{"an error instead", func() store.Outcome {
			o := again
			o.Status, o.Value, o.Error = store.OutcomeError, nil, "boom"
			return o
		}()},
		{"another function", func() store.Outcome { o := again; o.Function = "other"; return o }()},
		{"another kind", func() store.Outcome { o := again; o.Kind = "call"; return o }()},
		{"a value for a nil one", func() store.Outcome { o := empty; o.Value = []byte(`1`); return o }()},
		{"another error text", func() store.Outcome { o := failed; o.Error = "approved after all"; return o }()},
		{"ok for an error", func() store.Outcome {
			o := failed
			o.Status, o.Value, o.Error = store.OutcomeOK, []byte(`true`), ""
			return o
		}()},
	} {
		err := s.Commit(t.Context(), store.Batch{Outcomes: []store.RunOutcome{innocent, ro("wo-1", c.o)}})
		wantImmutable(t, "rewrite "+c.o.Key+" with "+c.what, err, "wo-1", c.o.Key)
	}
	// A key settled twice in one batch, differently.
	n1, n2 := settledOK("t0.5", 10, `1`), settledOK("t0.5", 10, `2`)
	wantImmutable(t, "one key settled twice in a batch", s.Commit(t.Context(), store.Batch{Outcomes: []store.RunOutcome{ro("wo-1", n1), ro("wo-1", n2)}}), "wo-1", "t0.5")
	// Settled, then the same again in one batch: fine.
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("wo-1", n1), ro("wo-1", n1)}})

	after := mustOutcomes(t, s, "wo-1")
	if len(after) != 4 {
		t.Fatalf("outcomes after the refused batches: %d, want 4 (t0.9 never applied): %+v", len(after), after)
	}
	checkOutcome(t, after[0], failed)
	checkOutcome(t, after[1], again)
	checkOutcome(t, after[3], n1)
}

// testWriteOnceRun: a completed or canceled run keeps its status, result,
// error and module; a failed or diverged one may be updated (resumed).
func testWriteOnceRun(t *testing.T, s store.Store) {
	done := testRun("wo-done")
	mustCreateRun(t, s, done)
	done.Status, done.Result, done.UpdatedAt = store.RunCompleted, []byte(`{"total":3}`), ts(5)
	mustCommit(t, s, store.Batch{Runs: []store.Run{done}})
	// The same again (a later timestamp): allowed.
	same := done
	same.UpdatedAt = ts(6)
	mustCommit(t, s, store.Batch{Runs: []store.Run{same}})

	canceled := testRun("wo-canceled")
	mustCreateRun(t, s, canceled)
	canceled.Status, canceled.Error = store.RunCanceled, "canceled: stop"
	mustCommit(t, s, store.Batch{Runs: []store.Run{canceled}})

	mustCreateRun(t, s, testRun("wo-other"))
	innocentOut := ro("wo-other", settledOK("t0.1", 1, `1`))
	for _, c := range []struct {
		what string
		r    store.Run
	}{
		{"another result", func() store.Run { r := same; r.Result = []byte(`{"total":4}`); return r }()},
		{"running again", func() store.Run { r := same; r.Status, r.Result = store.RunRunning, nil; return r }()},
		{"failed", func() store.Run { r := same; r.Status, r.Error = store.RunFailed, "late"; return r }()},
		{"another module", func() store.Run { r := same; r.ModuleHash = fmt.Sprintf("%064x", 9); return r }()},
		{"canceled run pending", func() store.Run { r := canceled; r.Status, r.Error = store.RunPending, ""; return r }()},
		{"canceled run completed", func() store.Run { r := canceled; r.Status, r.Result = store.RunCompleted, []byte(`1`); return r }()},
	} {
		err := s.Commit(t.Context(), store.Batch{Outcomes: []store.RunOutcome{innocentOut}, Runs: []store.Run{c.r}})
		wantImmutable(t, "update "+c.r.ID+": "+c.what, err, c.r.ID, string(mustRun(t, s, c.r.ID).Status))
	}
	if got := mustOutcomes(t, s, "wo-other"); len(got) != 0 {
		t.Errorf("the outcome of a refused batch was applied: %+v", got)
	}
	checkRun(t, "completed run after refused updates", mustRun(t, s, "wo-done"), same)
	checkRun(t, "canceled run after refused updates", mustRun(t, s, "wo-canceled"), canceled)

	// Failed and diverged runs are resumed: any update goes.
	for _, st := range []store.RunStatus{store.RunFailed, store.RunDiverged} {
		r := testRun("wo-" + string(st))
		mustCreateRun(t, s, r)
		r.Status, r.Error = st, "it broke"
		mustCommit(t, s, store.Batch{Runs: []store.Run{r}})
		r.Status, r.Error, r.ModuleHash, r.UpdatedAt = store.RunRunning, "", fmt.Sprintf("%064x", 2), ts(9)
		mustCommit(t, s, store.Batch{Runs: []store.Run{r}})
		r.Status, r.Result = store.RunCompleted, []byte(`"fixed"`)
		mustCommit(t, s, store.Batch{Runs: []store.Run{r}})
		checkRun(t, "resumed "+string(st)+" run", mustRun(t, s, r.ID), r)
	}
}

// testWriteOnceConcurrent: batches that break the rule fail alone, while
// concurrent good batches (which a backend may commit together) go
// through.
func testWriteOnceConcurrent(t *testing.T, s store.Store) {
	const n = 16
	for i := range n {
		mustCreateRun(t, s, testRun(fmt.Sprintf("wc-%02d", i)))
		mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro(fmt.Sprintf("wc-%02d", i), settledOK("t0.1", 1, `1`))}})
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("wc-%02d", i)
			b := store.Batch{Outcomes: []store.RunOutcome{ro(id, settledOK("t0.2", 2, `2`))}}
			if i%2 == 1 { // and change the settled t0.1
				b.Outcomes = append(b.Outcomes, ro(id, settledOK("t0.1", 1, `"changed"`)))
			}
			errs[i] = s.Commit(t.Context(), b)
		})
	}
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("wc-%02d", i)
		got := mustOutcomes(t, s, id)
		if i%2 == 1 {
			wantImmutable(t, "concurrent bad batch "+id, errs[i], id, "t0.1")
			if len(got) != 1 || string(got[0].Value) != `1` {
				t.Errorf("run %s after its refused batch: %+v", id, got)
			}
			continue
		}
		if errs[i] != nil || len(got) != 2 {
			t.Errorf("good batch of %s: error %v, outcomes %+v", id, errs[i], got)
		}
	}
}
