package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
	"github.com/skeinrun/skein/store/sqlite"
	"github.com/skeinrun/skein/store/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCopies checks that the store keeps copies of the slices it is given
// and hands out copies of what it keeps.
func TestCopies(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	defer s.Close()

	m := store.Module{Hash: "h", Name: "n", Bytes: []byte("wasm"), Workflows: []string{"w"}}
	must(t, s.PutModule(ctx, m))
	m.Bytes[0], m.Workflows[0] = 'X', "X"
	got, err := s.Module(ctx, "h")
	must(t, err)
	got.Bytes[1], got.Workflows[0] = 'X', "X"
	ms, err := s.Modules(ctx)
	must(t, err)
	ms[0].Workflows[0] = "X"
	if got, _ := s.Module(ctx, "n"); string(got.Bytes) != "wasm" || got.Workflows[0] != "w" {
		t.Errorf("module changed through a caller's slice: %q %q", got.Bytes, got.Workflows)
	}

	r := store.Run{ID: "r", Input: []byte(`"in"`), Result: []byte(`"res"`)}
	created, _, err := s.CreateRun(ctx, r)
	must(t, err)
	r.Input[1], created.Input[2], created.Result[1] = 'X', 'X', 'X'
	again, _, err := s.CreateRun(ctx, r)
	must(t, err)
	again.Input[1] = 'X'
	one, err := s.Run(ctx, "r")
	must(t, err)
	one.Input[1] = 'X'
	list, err := s.Runs(ctx, store.RunFilter{})
	must(t, err)
	list[0].Input[1] = 'X'
	due, err := s.DueRuns(ctx, 0, 0)
	must(t, err)
	due[0].Input[1] = 'X'
	canceled, err := s.RequestCancel(ctx, "r", "why")
	must(t, err)
	canceled.Input[1] = 'X'
	if r, _ := s.Run(ctx, "r"); string(r.Input) != `"in"` || string(r.Result) != `"res"` {
		t.Errorf("run changed through a caller's slice: %s %s", r.Input, r.Result)
	}

	upd := store.Run{ID: "r", Status: store.RunSuspended, Result: []byte(`"new"`)}
	p := store.Outcome{Key: "p", Kind: "promise", Function: "promise", Status: store.OutcomePending, Value: []byte(`"v"`)}
	set := store.Settlement{RunID: "r", Key: "c", Status: store.OutcomeOK, Value: []byte(`"c"`)}
	must(t, s.Commit(ctx, store.Batch{
		Outcomes:    []store.RunOutcome{{RunID: "r", Outcome: p}, {RunID: "r", Outcome: store.Outcome{Key: "c", Kind: "child", Status: store.OutcomePending}}},
		Runs:        []store.Run{upd},
		Settlements: []store.Settlement{set},
	}))
	upd.Result[1], p.Value[1], set.Value[1] = 'X', 'X', 'X'
	ext := store.Settlement{RunID: "r", Key: "p", Status: store.OutcomeOK, Value: []byte(`"s"`)}
	must(t, s.Settle(ctx, ext))
	ext.Value[1] = 'X'
	os, err := s.Outcomes(ctx, "r")
	must(t, err)
	os[1].Value[1] = 'X'
	sets, err := s.Settlements(ctx, "r")
	must(t, err)
	for _, st := range sets {
		st.Value[1] = 'X'
	}

	if r, _ := s.Run(ctx, "r"); string(r.Result) != `"new"` {
		t.Errorf("run result = %s, want \"new\"", r.Result)
	}
	os, _ = s.Outcomes(ctx, "r")
	if len(os) != 2 || string(os[1].Value) != `"v"` {
		t.Errorf("outcomes = %+v, want p with value \"v\"", os)
	}
	sets, _ = s.Settlements(ctx, "r")
	if len(sets) != 2 || string(sets[0].Value) != `"c"` || string(sets[1].Value) != `"s"` {
		t.Errorf("settlements = %+v, want c then p with their values", sets)
	}
}

// TestConcurrentUse runs every method at once; run it with -race.
func TestConcurrentUse(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	defer s.Close()
	const workers, rounds = 8, 50
	check := func(err error) {
		if err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				id := fmt.Sprintf("r%d.%d", w, i)
				key := fmt.Sprintf("k%d", i)
				check(s.PutModule(ctx, store.Module{Hash: fmt.Sprintf("h%d", i%5), Name: "app", Bytes: []byte{byte(i)}}))
				if _, _, err := s.CreateRun(ctx, store.Run{ID: id, Input: []byte("1")}); err != nil {
					t.Error(err)
					return
				}
				check(s.Commit(ctx, store.Batch{
					Outcomes: []store.RunOutcome{{RunID: id, Outcome: store.Outcome{Key: key, Kind: "promise", Status: store.OutcomePending}}},
					Runs:     []store.Run{{ID: id, Status: store.RunSuspended, WakeAt: int64(i)}},
				}))
				check(s.Settle(ctx, store.Settlement{RunID: id, Key: key, Status: store.OutcomeOK, Value: []byte("2")}))
				if _, err := s.RequestCancel(ctx, id, "stop"); err != nil {
					t.Error(err)
				}
				_, err1 := s.Module(ctx, "app")
				_, err2 := s.Modules(ctx)
				_, err3 := s.Runs(ctx, store.RunFilter{Status: store.RunSuspended, Limit: 10})
				_, err4 := s.DueRuns(ctx, int64(i), 10)
				_, err5 := s.Outcomes(ctx, id)
				_, err6 := s.Settlements(ctx, id)
				if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	rs, err := s.Runs(ctx, store.RunFilter{Limit: workers * rounds})
	must(t, err)
	if len(rs) != workers*rounds {
		t.Errorf("%d runs, want %d", len(rs), workers*rounds)
	}
	due, err := s.DueRuns(ctx, 0, 0)
	must(t, err)
	if len(due) != workers*rounds {
		t.Errorf("%d due runs, want %d (each has a settlement and a cancellation waiting)", len(due), workers*rounds)
	}
}

// TestClosedAndCanceled checks that every method fails after Close, and
// that a canceled context stops a write from landing.
func TestClosedAndCanceled(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	_, _, err := s.CreateRun(ctx, store.Run{ID: "r"})
	must(t, err)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err = s.Commit(canceled, store.Batch{Outcomes: []store.RunOutcome{{RunID: "r", Outcome: store.Outcome{Key: "k"}}}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a canceled context: %v, want context.Canceled", err)
	}
	if os, _ := s.Outcomes(ctx, "r"); len(os) != 0 {
		t.Errorf("a canceled commit landed")
	}

	must(t, s.Close())
	must(t, s.Close())
	storetest.CheckClosed(t, s, memory.ErrClosed)
}

// TestMatchesSQLite applies the same random operations to a memory store
// and to an in-memory SQLite store and compares every answer.
func TestMatchesSQLite(t *testing.T) {
	storetest.Differential(t, "memory", func(*testing.T) store.Store { return memory.New() },
		"sqlite", func(t *testing.T) store.Store {
			db, err := sqlite.Open(t.Context(), ":memory:", sqlite.Options{})
			must(t, err)
			return db
		})
}

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		memory.New().Close()
	}
}

// BenchmarkCommitOutcomes measures one Commit of 1,000 outcomes of one run.
func BenchmarkCommitOutcomes(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	batches := make([]store.Batch, b.N)
	for i := range batches {
		id := fmt.Sprintf("run-%06d", i)
		if _, _, err := s.CreateRun(ctx, store.Run{ID: id, ModuleHash: "h", Workflow: "w"}); err != nil {
			b.Fatal(err)
		}
		for k := range n {
			batches[i].Outcomes = append(batches[i].Outcomes, store.RunOutcome{RunID: id, Outcome: store.Outcome{
				Key: fmt.Sprintf("t0.%d", k), Kind: "step", Function: "fetch", Status: store.OutcomeOK,
				Value: []byte(`{"status":200}`), Attempts: 1, Seq: int64(k + 1),
			}})
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if err := s.Commit(ctx, batches[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// DeleteRuns removes the runs it matches with everything of theirs, and
// leaves the others as they were.
func TestDeleteRuns(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	for _, id := range []string{"a", "a.1", "a~2", "ab", "b"} {
		if _, _, err := s.CreateRun(ctx, store.Run{ID: id, ModuleHash: "m", Workflow: "w"}); err != nil {
			t.Fatal(err)
		}
		b := store.Batch{Outcomes: []store.RunOutcome{{RunID: id, Outcome: store.Outcome{Key: "1", Kind: "call", Function: "f", Status: store.OutcomePending}}},
			Tasks: []store.Task{{RunID: id, Key: "1", Name: "f"}}}
		if err := s.Commit(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	tree := func(id string) bool { return id == "a" || strings.HasPrefix(id, "a.") || strings.HasPrefix(id, "a~") }
	if n := s.DeleteRuns(tree); n != 3 {
		t.Fatalf("deleted %d runs; want 3", n)
	}
	rs, err := s.Runs(ctx, store.RunFilter{})
	if err != nil || len(rs) != 2 || rs[0].ID != "ab" || rs[1].ID != "b" {
		t.Fatalf("runs left: %+v, %v; want ab and b", rs, err)
	}
	for _, id := range []string{"a", "a.1"} {
		if _, err := s.Run(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Run(%s) after DeleteRuns: %v", id, err)
		}
		if ts, _ := s.Tasks(ctx, id); len(ts) != 0 {
			t.Errorf("tasks of %s after DeleteRuns: %d", id, len(ts))
		}
	}
	if ts, _ := s.Tasks(ctx, "ab"); len(ts) != 1 {
		t.Errorf("tasks of ab: %d; want 1", len(ts))
	}
}
