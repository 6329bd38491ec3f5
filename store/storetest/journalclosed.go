package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// testJournalClosed: once a run is completed, canceled or continued, no
// outcome of it can be written: a new key, a rewrite that an open run
// allows (renumbered, orphaned), the settlement of a pending outcome, a
// late attempt counter; fenced or not. Each batch fails whole with
// ErrImmutable naming the run and its status. The batch that ends the
// run may write outcomes, and a failed run's journal stays open.
func testJournalClosed(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("jc-open"))
	innocent := ro("jc-open", settledOK("t0.1", 1, `1`))
	pending := store.Outcome{Key: "t0.2", Kind: "call", Function: "charge", Status: store.OutcomePending, Attempts: 1, Seq: 2, UpdatedAt: ts(3)}
	for _, st := range []store.RunStatus{store.RunCompleted, store.RunCanceled, store.RunContinued} {
		id := "jc-" + string(st)
		r := testRun(id)
		mustCreateRun(t, s, r)
		a := settledOK("t0.1", 1, `"a"`)
		mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro(id, a), ro(id, pending)}})
		r.Status, r.Result, r.UpdatedAt = st, []byte(`"done"`), ts(5)
		last := settledOK("t0.3", 3, `"last"`)
		mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro(id, last)}, Runs: []store.Run{r}})
		before := mustOutcomes(t, s, id)

		settle := pending
		settle.Status, settle.Value = store.OutcomeOK, []byte(`true`)
		late := pending
		late.Attempts = 2
		for _, c := range []struct {
			what string
			o    store.Outcome
		}{
			{"a new key", settledOK("t0.4", 4, `"new"`)},
			{"a renumbered outcome", func() store.Outcome { o := a; o.Seq = 9; return o }()},
			{"an orphan mark", func() store.Outcome { o := a; o.Orphaned = true; return o }()},
			{"the same outcome again", a},
			{"a pending outcome settled", settle},
			{"a late attempt counter", late},
		} {
			err := s.Commit(t.Context(), store.Batch{Outcomes: []store.RunOutcome{innocent, ro(id, c.o)}})
			wantImmutable(t, id+": "+c.what, err, id, string(st))
		}
		// A fenced write: ClaimRun takes a run whatever its status.
		cr, err := s.ClaimRun(t.Context(), id, "w1", time.Now().UnixNano(), time.Minute)
		if err != nil {
			t.Fatalf("ClaimRun %s: %v", id, err)
		}
		err = s.Commit(t.Context(), store.Batch{Outcomes: []store.RunOutcome{ro(id, settledOK("t0.5", 5, `5`))}, Fence: &cr.Lease})
		wantImmutable(t, id+": a fenced write", err, id, string(st))
		if err := s.ReleaseLease(t.Context(), cr.Lease); err != nil {
			t.Fatalf("ReleaseLease %s: %v", id, err)
		}

		after := mustOutcomes(t, s, id)
		if len(after) != len(before) {
			t.Fatalf("%s: %d outcomes after the refused writes, %d before: %+v", id, len(after), len(before), after)
		}
		for i := range before {
			checkOutcome(t, after[i], before[i])
		}
	}
	if got := mustOutcomes(t, s, "jc-open"); len(got) != 0 {
		t.Errorf("the innocent outcome of a refused batch was applied: %+v", got)
	}

	// A failed run may be resumed: its journal stays open.
	failed := testRun("jc-failed")
	mustCreateRun(t, s, failed)
	failed.Status, failed.Error = store.RunFailed, "it broke"
	mustCommit(t, s, store.Batch{Runs: []store.Run{failed}})
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("jc-failed", settledOK("t0.1", 1, `1`))}})
	if got := mustOutcomes(t, s, "jc-failed"); len(got) != 1 {
		t.Errorf("failed run's outcomes: %+v, want the one written", got)
	}
}

// testJournalClosedRace: a run's end and a write of its outcomes race,
// while a reader waits to see the run final and reads its journal then.
// The write lands before the end or is refused, so the journal the reader
// read is the journal for good.
func testJournalClosedRace(t *testing.T, s store.Store) {
	const n = 24
	var wg sync.WaitGroup
	seen := make([][]store.Outcome, n)
	writeErrs := make([]error, n)
	for i := range n {
		id := fmt.Sprintf("jr-%02d", i)
		r := testRun(id)
		mustCreateRun(t, s, r)
		mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro(id, settledOK("t0.1", 1, `1`))}})
		r.Status, r.Result, r.UpdatedAt = store.RunCompleted, []byte(`1`), ts(5)
		wg.Go(func() {
			if err := s.Commit(t.Context(), store.Batch{Runs: []store.Run{r}}); err != nil {
				t.Errorf("end %s: %v", id, err)
			}
		})
		wg.Go(func() {
			writeErrs[i] = s.Commit(t.Context(), store.Batch{Outcomes: []store.RunOutcome{ro(id, settledOK("t0.2", 2, `2`))}})
		})
		wg.Go(func() {
			for range 10_000 {
				got, err := s.Run(t.Context(), id)
				if err != nil {
					t.Errorf("Run %s: %v", id, err)
					return
				}
				if got.Status.Final() {
					seen[i], err = s.Outcomes(t.Context(), id)
					if err != nil {
						t.Errorf("Outcomes %s: %v", id, err)
					}
					return
				}
				time.Sleep(50 * time.Microsecond)
			}
			t.Errorf("run %s never seen final", id)
		})
	}
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("jr-%02d", i)
		if err := writeErrs[i]; err != nil && !errors.Is(err, store.ErrImmutable) {
			t.Errorf("write racing the end of %s: %v, want success or ErrImmutable", id, err)
		}
		final := mustOutcomes(t, s, id)
		if len(final) != len(seen[i]) {
			t.Errorf("run %s: the journal read once it was final had %d outcomes, it has %d now", id, len(seen[i]), len(final))
		}
		if want := 1 + btoi(writeErrs[i] == nil); len(final) != want {
			t.Errorf("run %s: %d outcomes, want %d (the racing write: %v)", id, len(final), want, writeErrs[i])
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
