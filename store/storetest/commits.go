package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/skeinrun/skein/store"
)

// The commit cases of the suite: batches of outcomes and run updates,
// their order, concurrency and failures, and Close.

func mustCommit(t *testing.T, s store.Store, b store.Batch) {
	t.Helper()
	if err := s.Commit(t.Context(), b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func mustOutcomes(t *testing.T, s store.Store, runID string) []store.Outcome {
	t.Helper()
	os, err := s.Outcomes(t.Context(), runID)
	if err != nil {
		t.Fatalf("Outcomes(%s): %v", runID, err)
	}
	// Outcome reads each of them alone, the same.
	for _, o := range os {
		one, err := s.Outcome(t.Context(), runID, o.Key)
		if err != nil || !reflect.DeepEqual(one, o) {
			t.Fatalf("Outcome(%s, %s) = %+v, %v; Outcomes lists %+v", runID, o.Key, one, err, o)
		}
	}
	if one, err := s.Outcome(t.Context(), runID, "no such key"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Outcome(%s, no such key) = %+v, %v; want ErrNotFound", runID, one, err)
	}
	return os
}

func checkOutcome(t *testing.T, got, want store.Outcome) {
	t.Helper()
	type field struct {
		name      string
		got, want any
	}
	for _, f := range []field{
		{"Key", got.Key, want.Key},
		{"Kind", got.Kind, want.Kind},
		{"Function", got.Function, want.Function},
		{"Status", got.Status, want.Status},
		{"Value", string(got.Value), string(want.Value)},
		{"Error", got.Error, want.Error},
		{"Attempts", got.Attempts, want.Attempts},
		{"Seq", got.Seq, want.Seq},
		{"Waited", got.Waited, want.Waited},
		{"Idle", got.Idle, want.Idle},
		{"WakeOrder", got.WakeOrder, want.WakeOrder},
		{"VTime", got.VTime, want.VTime},
		{"Deadline", got.Deadline, want.Deadline},
		{"Orphaned", got.Orphaned, want.Orphaned},
	} {
		if f.got != f.want {
			t.Errorf("outcome %s: %s = %v, want %v", want.Key, f.name, f.got, f.want)
		}
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("outcome %s: UpdatedAt = %v, want %v", want.Key, got.UpdatedAt, want.UpdatedAt)
	}
}

func testCommitRoundTrip(t *testing.T, s store.Store) {
	r := mustCreateRun(t, s, testRun("run-1"))
	other := mustCreateRun(t, s, testRun("run-2"))
	step := store.Outcome{
		Key: "t0.1", Kind: "step", Function: "fetch", Status: store.OutcomeOK,
		Value: []byte(`{"body":"hi"}`), Attempts: 3, Seq: 1, Waited: true, Idle: 4, WakeOrder: 2,
		VTime: ts(10).UnixNano(), UpdatedAt: ts(11),
	}
	failed := store.Outcome{
		Key: "t1.2", Kind: "call", Function: "charge", Status: store.OutcomeError,
		Error: "card declined", Attempts: 1 << 40 >> 20, Seq: 1 << 40, VTime: -1, Orphaned: true, UpdatedAt: ts(12),
	}
	timer := store.Outcome{
		Key: "t0.3", Kind: "sleep", Function: "sleep", Status: store.OutcomePending,
		Deadline: ts(3600).UnixNano(), UpdatedAt: ts(13),
	}
	r.Status = store.RunSuspended
	r.WakeAt = timer.Deadline
	r.Result = []byte(`"partial"`)
	r.Error = "diverged once"
	r.UpdatedAt = ts(14)
	mustCommit(t, s, store.Batch{
		Outcomes: []store.RunOutcome{ro("run-1", step), ro("run-1", failed), ro("run-1", timer), ro("run-2", step)},
		Runs:     []store.Run{r},
	})

	got := mustOutcomes(t, s, "run-1")
	want := []store.Outcome{step, failed, timer}
	if len(got) != len(want) {
		t.Fatalf("Outcomes = %d rows, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		checkOutcome(t, got[i], want[i])
	}
	if got := mustOutcomes(t, s, "run-2"); len(got) != 1 {
		t.Errorf("Outcomes(run-2) = %d rows, want 1", len(got))
	}
	if got := mustOutcomes(t, s, "no-such-run"); len(got) != 0 {
		t.Errorf("Outcomes(no-such-run) = %d rows, want 0", len(got))
	}
	checkRun(t, "updated run", mustRun(t, s, "run-1"), r)
	checkRun(t, "untouched run", mustRun(t, s, "run-2"), other)

	// Only the mutable fields of a run are written by Commit.
	upd := r
	upd.Workflow = "changed"
	upd.Input = []byte(`"changed"`)
	upd.Seed = 1
	upd.ModuleHash = "fixed-module"
	upd.Status = store.RunCompleted
	upd.Result = []byte(`42`)
	upd.Error = ""
	upd.WakeAt = 0
	upd.UpdatedAt = ts(20)
	mustCommit(t, s, store.Batch{Runs: []store.Run{upd}})
	want2 := r
	want2.ModuleHash, want2.Status, want2.Result, want2.Error, want2.WakeAt, want2.UpdatedAt = upd.ModuleHash, upd.Status, upd.Result, upd.Error, upd.WakeAt, upd.UpdatedAt
	checkRun(t, "run after second update", mustRun(t, s, "run-1"), want2)

	// An empty batch is a no-op.
	mustCommit(t, s, store.Batch{})
}

func testCommitLargeBatch(t *testing.T, s store.Store) {
	const runs, perRun = 3, 700
	var b store.Batch
	want := map[string][]store.Outcome{}
	for r := range runs {
		id := fmt.Sprintf("run-%d", r)
		mustCreateRun(t, s, testRun(id))
		for i := range perRun {
			o := store.Outcome{
				Key: fmt.Sprintf("t%d.%d", r, i), Kind: "step", Function: fmt.Sprintf("f%d", i%7),
				Status: store.OutcomeOK, Value: []byte(fmt.Sprintf(`{"i":%d}`, i)), Attempts: i % 3,
				Seq: int64(i + 1), Waited: i%2 == 0, Idle: int64(i / 10), WakeOrder: i % 10,
				VTime: ts(int64(i)).UnixNano(), Deadline: int64(i) << 33, UpdatedAt: ts(int64(r)),
			}
			if i%5 == 0 {
				o.Status, o.Value, o.Error = store.OutcomeError, nil, fmt.Sprintf("error %d", i)
			}
			b.Outcomes = append(b.Outcomes, ro(id, o))
			want[id] = append(want[id], o)
		}
	}
	// Rewrites of keys written earlier in the same batch: the last wins
	// (in what a settled outcome may change: see testWriteOnceOutcome).
	for _, i := range []int{0, 31, 32, 33, 699} {
		o := want["run-1"][i]
		o.Orphaned, o.Attempts, o.VTime = true, 42, 7
		b.Outcomes = append(b.Outcomes, ro("run-1", o))
		want["run-1"][i] = o
	}
	mustCommit(t, s, b)
	for id, ws := range want {
		got := mustOutcomes(t, s, id)
		if len(got) != len(ws) {
			t.Fatalf("Outcomes(%s) = %d rows, want %d", id, len(got), len(ws))
		}
		for i := range ws {
			checkOutcome(t, got[i], ws[i])
		}
	}

	// One orphan deep inside a large batch fails all of it.
	var bad store.Batch
	for i := range 100 {
		id := "run-0"
		if i == 70 {
			id = "no-such-run"
		}
		bad.Outcomes = append(bad.Outcomes, ro(id, store.Outcome{
			Key: fmt.Sprintf("bad.%d", i), Kind: "step", Function: "f", Status: store.OutcomePending, UpdatedAt: ts(0),
		}))
	}
	if err := s.Commit(t.Context(), bad); err == nil {
		t.Errorf("Commit with an outcome of an unknown run succeeded")
	}
	if got := mustOutcomes(t, s, "run-0"); len(got) != perRun {
		t.Errorf("after failed batch, run-0 has %d outcomes, want %d", len(got), perRun)
	}
}

func testOutcomeUpsert(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("run-1"))
	pending := store.Outcome{
		Key: "t0.1", Kind: "promise", Function: "approve", Status: store.OutcomePending,
		Deadline: 77, UpdatedAt: ts(1),
	}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", pending)}})
	settled := store.Outcome{
		Key: "t0.1", Kind: "promise", Function: "approve", Status: store.OutcomeOK,
		Value: []byte(`true`), Attempts: 1, Seq: 1, Waited: true, Idle: 1, WakeOrder: 0,
		VTime: 99, UpdatedAt: ts(2),
	}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", settled)}})
	got := mustOutcomes(t, s, "run-1")
	if len(got) != 1 {
		t.Fatalf("Outcomes after upsert = %d rows, want 1: %+v", len(got), got)
	}
	checkOutcome(t, got[0], settled) // every field replaced, Deadline included

	// The same key in one batch twice: the last write wins (a settled
	// outcome may not change: see testWriteOnceOutcome).
	first := settled
	first.Key, first.Seq, first.Status, first.Value = "t0.2", 0, store.OutcomePending, nil
	last := settled
	last.Key, last.Seq = "t0.2", 2
	last.Status, last.Value, last.Error = store.OutcomeError, nil, "boom"
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", first), ro("run-1", last)}})
	got = mustOutcomes(t, s, "run-1")
	if len(got) != 2 {
		t.Fatalf("Outcomes = %d rows, want 2", len(got))
	}
	checkOutcome(t, got[1], last)
}

func testOutcomesOrder(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("run-1"))
	mk := func(key string, seq int64) store.RunOutcome {
		st := store.OutcomeOK
		if seq == 0 {
			st = store.OutcomePending
		}
		return store.RunOutcome{RunID: "run-1", Outcome: store.Outcome{
			Key: key, Kind: "step", Function: "f", Status: st, Seq: seq, UpdatedAt: ts(0),
		}}
	}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{
		mk("t0.9", 0), mk("t0.1", 3), mk("t0.10", 0), mk("t0.2", 1),
	}})
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{
		mk("t0.3", 10), mk("t0.0", 0), mk("t1.1", 2),
	}})
	var got []string
	for _, o := range mustOutcomes(t, s, "run-1") {
		got = append(got, o.Key)
	}
	want := []string{"t0.2", "t1.1", "t0.1", "t0.3", "t0.0", "t0.10", "t0.9"}
	if !slices.Equal(got, want) {
		t.Errorf("Outcomes order = %q, want %q", got, want)
	}
}

func testDueRuns(t *testing.T, s store.Store) {
	const now = 1_000
	for _, r := range []struct {
		id     string
		status store.RunStatus
		wake   int64
	}{
		{"a-due", store.RunSuspended, 500},
		{"b-due-now", store.RunSuspended, now},
		{"c-later", store.RunSuspended, now + 1},
		{"d-no-timer", store.RunSuspended, 0},
		{"e-pending", store.RunPending, 0},
		{"f-running", store.RunRunning, 0},
		{"g-done", store.RunCompleted, 10},
		{"h-failed", store.RunFailed, 0},
		{"i-diverged", store.RunDiverged, 10},
		{"j-canceled", store.RunCanceled, 0},
		{"k-due-early", store.RunSuspended, 20},
		{"l-running-timer", store.RunRunning, 900},
	} {
		run := testRun(r.id)
		mustCreateRun(t, s, run)
		run.Status, run.WakeAt = r.status, r.wake
		mustCommit(t, s, store.Batch{Runs: []store.Run{run}})
	}
	ctx := t.Context()
	rs, err := s.DueRuns(ctx, now, 100)
	if err != nil {
		t.Fatalf("DueRuns: %v", err)
	}
	want := []string{"e-pending", "f-running", "k-due-early", "a-due", "l-running-timer", "b-due-now"}
	if got := runIDs(rs); !slices.Equal(got, want) {
		t.Errorf("DueRuns = %q, want %q", got, want)
	}
	rs, err = s.DueRuns(ctx, now, 3)
	if err != nil {
		t.Fatalf("DueRuns(limit 3): %v", err)
	}
	if got := runIDs(rs); !slices.Equal(got, want[:3]) {
		t.Errorf("DueRuns(limit 3) = %q, want %q", got, want[:3])
	}
	rs, err = s.DueRuns(ctx, 0, 100)
	if err != nil {
		t.Fatalf("DueRuns(now 0): %v", err)
	}
	if got := runIDs(rs); !slices.Equal(got, []string{"e-pending", "f-running", "l-running-timer"}) {
		t.Errorf("DueRuns(now 0) = %q", got)
	}
}

func testCommitUnknownRunUpdate(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("run-1"))
	o := store.Outcome{Key: "t0.1", Kind: "step", Function: "f", Status: store.OutcomeOK, Seq: 1, UpdatedAt: ts(0)}
	ghost := testRun("ghost")
	ghost.Status = store.RunCompleted
	err := s.Commit(t.Context(), store.Batch{
		Outcomes: []store.RunOutcome{ro("run-1", o)},
		Runs:     []store.Run{ghost},
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Commit updating an unknown run: error = %v, want ErrNotFound", err)
	}
	if got := mustOutcomes(t, s, "run-1"); len(got) != 0 {
		t.Errorf("failed batch left %d outcomes behind", len(got))
	}
	if _, err := s.Run(t.Context(), "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run(ghost) after failed update: %v, want ErrNotFound", err)
	}
}

func testCommitConcurrent(t *testing.T, s store.Store) {
	const workers, commits, perCommit = 16, 25, 10
	for w := range workers {
		mustCreateRun(t, s, testRun(fmt.Sprintf("run-%02d", w)))
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, workers*commits)
	for w := range workers {
		wg.Go(func() {
			runID := fmt.Sprintf("run-%02d", w)
			for c := range commits {
				var b store.Batch
				for k := range perCommit {
					seq := int64(c*perCommit + k + 1)
					b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: runID, Outcome: store.Outcome{
						Key: fmt.Sprintf("t0.%d", seq), Kind: "step", Function: "f", Status: store.OutcomeOK,
						Value: []byte(`1`), Seq: seq, UpdatedAt: ts(0),
					}})
				}
				run := testRun(runID)
				run.Status = store.RunRunning
				run.WakeAt = int64(c + 1)
				b.Runs = []store.Run{run}
				if err := s.Commit(ctx, b); err != nil {
					errs <- fmt.Errorf("worker %d commit %d: %w", w, c, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range workers {
		runID := fmt.Sprintf("run-%02d", w)
		os := mustOutcomes(t, s, runID)
		if len(os) != commits*perCommit {
			t.Errorf("%s: %d outcomes, want %d", runID, len(os), commits*perCommit)
			continue
		}
		for i, o := range os {
			if o.Seq != int64(i+1) {
				t.Errorf("%s: outcome %d has seq %d", runID, i, o.Seq)
				break
			}
		}
		if r := mustRun(t, s, runID); r.WakeAt != commits || r.Status != store.RunRunning {
			t.Errorf("%s: status %s wake %d, want running and %d (the last commit wins)", runID, r.Status, r.WakeAt, commits)
		}
	}
}

func testCommitBadBatchFailsAlone(t *testing.T, s store.Store) {
	const workers, rounds = 16, 20
	for w := range workers {
		mustCreateRun(t, s, testRun(fmt.Sprintf("run-%02d", w)))
	}
	ctx := t.Context()
	outcome := func(key string) store.Outcome {
		return store.Outcome{Key: key, Kind: "step", Function: "f", Status: store.OutcomeOK, Seq: 1, UpdatedAt: ts(0)}
	}
	var wg sync.WaitGroup
	goodErrs := make(chan error, workers*rounds)
	var badNil []int
	var mu sync.Mutex
	for round := range rounds {
		start := make(chan struct{})
		for w := range workers {
			wg.Go(func() {
				<-start
				runID := fmt.Sprintf("run-%02d", w)
				b := store.Batch{Outcomes: []store.RunOutcome{ro(runID, outcome(fmt.Sprintf("good.%d", round)))}}
				if err := s.Commit(ctx, b); err != nil {
					goodErrs <- fmt.Errorf("good batch %s round %d: %w", runID, round, err)
				}
			})
		}
		for _, kind := range []string{"orphan-outcome", "unknown-run-update"} {
			wg.Go(func() {
				<-start
				// A valid write first, then the violation: neither may land.
				b := store.Batch{Outcomes: []store.RunOutcome{ro("run-00", outcome(fmt.Sprintf("bad.%s.%d", kind, round)))}}
				if kind == "orphan-outcome" {
					b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: "no-such-run", Outcome: outcome("x")})
				} else {
					b.Runs = []store.Run{testRun("no-such-run")}
				}
				if err := s.Commit(ctx, b); err == nil {
					mu.Lock()
					badNil = append(badNil, round)
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
	}
	close(goodErrs)
	for err := range goodErrs {
		t.Error(err)
	}
	if len(badNil) > 0 {
		t.Errorf("bad batches succeeded in rounds %v", badNil)
	}
	for w := range workers {
		runID := fmt.Sprintf("run-%02d", w)
		os := mustOutcomes(t, s, runID)
		good := 0
		for _, o := range os {
			if len(o.Key) >= 4 && o.Key[:4] == "bad." {
				t.Errorf("%s: outcome %s of a failed batch landed", runID, o.Key)
			} else {
				good++
			}
		}
		if good != rounds {
			t.Errorf("%s: %d good outcomes, want %d", runID, good, rounds)
		}
	}
	if _, err := s.Run(ctx, "no-such-run"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run(no-such-run): %v, want ErrNotFound", err)
	}
}

func testClose(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("run-1"))
	o := store.Outcome{Key: "t0.1", Kind: "step", Function: "f", Status: store.OutcomeOK, Seq: 1, UpdatedAt: ts(0)}
	// Commits racing with Close either land or fail; none panics or hangs.
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			o := o
			o.Key = fmt.Sprintf("t0.%d", i+2)
			_ = s.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", o)}})
		})
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	if err := s.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", o)}}); err == nil {
		t.Errorf("Commit after Close succeeded, want an error")
	}
	if _, _, err := s.CreateRun(ctx, testRun("run-2")); err == nil {
		t.Errorf("CreateRun after Close succeeded, want an error")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// ro pairs an outcome with its run.
func ro(runID string, o store.Outcome) store.RunOutcome {
	return store.RunOutcome{RunID: runID, Outcome: o}
}
