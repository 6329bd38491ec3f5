package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

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
	for name, call := range map[string]func() error{
		"PutModule": func() error { return s.PutModule(ctx, store.Module{Hash: "h"}) },
		"Module":    func() error { _, err := s.Module(ctx, "h"); return err },
		"Modules":   func() error { _, err := s.Modules(ctx); return err },
		"CreateRun": func() error { _, _, err := s.CreateRun(ctx, store.Run{ID: "r2"}); return err },
		"Run":       func() error { _, err := s.Run(ctx, "r"); return err },
		"Runs":      func() error { _, err := s.Runs(ctx, store.RunFilter{}); return err },
		"DueRuns":   func() error { _, err := s.DueRuns(ctx, 0, 0); return err },
		"Settle": func() error {
			return s.Settle(ctx, store.Settlement{RunID: "r", Key: "k", Status: store.OutcomeOK})
		},
		"Settlements":   func() error { _, err := s.Settlements(ctx, "r"); return err },
		"RequestCancel": func() error { _, err := s.RequestCancel(ctx, "r", "x"); return err },
		"Commit":        func() error { return s.Commit(ctx, store.Batch{}) },
		"Outcomes":      func() error { _, err := s.Outcomes(ctx, "r"); return err },
	} {
		if err := call(); !errors.Is(err, memory.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestMatchesSQLite applies the same random operations to a memory store
// and to an in-memory SQLite store and compares every answer.
func TestMatchesSQLite(t *testing.T) {
	seeds, ops := 8, 300
	if testing.Short() {
		seeds, ops = 3, 200
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			db, err := sqlite.Open(t.Context(), ":memory:", sqlite.Options{})
			must(t, err)
			defer db.Close()
			mem := memory.New()
			defer mem.Close()
			d := &differ{t: t, rng: rand.New(rand.NewPCG(seed, 1)), mem: mem, ref: db, start: time.Now()}
			for i := range ops {
				d.step(i)
				if t.Failed() {
					return
				}
			}
			d.compareAll("final state")
		})
	}
}

// differ drives a memory store and a reference store side by side.
type differ struct {
	t        *testing.T
	rng      *rand.Rand
	mem, ref store.Store
	start    time.Time // times at or after start were set by a store to now
}

var (
	diffRuns     = []string{"a", "b", "c", "d"}
	diffKeys     = []string{"1", "2", "3", store.CancelKey}
	diffHashes   = []string{"h1", "h2", "h3"}
	diffNames    = []string{"", "x", "y"}
	diffStatuses = []store.RunStatus{"", store.RunPending, store.RunRunning, store.RunSuspended, store.RunSuspended,
		store.RunCompleted, store.RunFailed, store.RunDiverged, store.RunCanceled}
	diffOutcomeStatuses = []store.OutcomeStatus{store.OutcomePending, store.OutcomeOK, store.OutcomeError}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// ts is a fixed time; small n give ties on purpose.
func ts(n int) time.Time { return time.Unix(1_700_000_000+int64(n), 123_456_000) }

// maybeTS is a fixed time or, one time in four, zero (the store sets now).
func (d *differ) maybeTS() time.Time {
	if d.rng.IntN(4) == 0 {
		return time.Time{}
	}
	return ts(d.rng.IntN(3))
}

func (d *differ) value() []byte {
	if d.rng.IntN(3) == 0 {
		return nil
	}
	return fmt.Appendf(nil, "%d", d.rng.IntN(100))
}

func (d *differ) runID() string {
	if d.rng.IntN(20) == 0 {
		return "ghost"
	}
	return pick(d.rng, diffRuns)
}

func (d *differ) step(i int) {
	ctx, rng := d.t.Context(), d.rng
	what := func(op string, args ...any) string { return fmt.Sprintf("op %d: %s%v", i, op, args) }
	switch rng.IntN(12) {
	case 0:
		m := store.Module{Hash: pick(rng, diffHashes), Name: pick(rng, diffNames), Bytes: d.value(),
			ABIVersion: rng.IntN(3), CreatedAt: ts(rng.IntN(3))}
		if rng.IntN(2) == 0 {
			m.Workflows = []string{"w1", "w2"}[:rng.IntN(3)]
		}
		d.compareErr(what("PutModule", m.Hash, m.Name), d.mem.PutModule(ctx, m), d.ref.PutModule(ctx, m))
	case 1:
		key := pick(rng, append(append([]string{""}, diffHashes...), diffNames...))
		m1, err1 := d.mem.Module(ctx, key)
		m2, err2 := d.ref.Module(ctx, key)
		d.compare(what("Module", key), m1, err1, m2, err2)
	case 2:
		m1, err1 := d.mem.Modules(ctx)
		m2, err2 := d.ref.Modules(ctx)
		d.compare(what("Modules"), m1, err1, m2, err2)
	case 3:
		r := store.Run{ID: pick(rng, diffRuns), ModuleHash: pick(rng, diffHashes), Workflow: "w", Input: d.value(),
			Status: pick(rng, diffStatuses), Seed: rng.Uint64(), StartTime: int64(rng.IntN(5)),
			WakeAt: int64(rng.IntN(6)), Deadline: int64(rng.IntN(6)), CreatedAt: d.maybeTS(), UpdatedAt: d.maybeTS()}
		if rng.IntN(4) == 0 {
			r.Cancel = "early"
		}
		r1, c1, err1 := d.mem.CreateRun(ctx, r)
		r2, c2, err2 := d.ref.CreateRun(ctx, r)
		d.compare(what("CreateRun", r.ID), []any{r1, c1}, err1, []any{r2, c2}, err2)
	case 4:
		f := store.RunFilter{Limit: rng.IntN(4) - 1, After: pick(rng, []string{"", "a", "b", "bb", "d"})}
		if rng.IntN(2) == 0 {
			f.Status = pick(rng, diffStatuses)
		}
		r1, err1 := d.mem.Runs(ctx, f)
		r2, err2 := d.ref.Runs(ctx, f)
		d.compare(what("Runs", f), r1, err1, r2, err2)
	case 5:
		now, limit := int64(rng.IntN(7)), rng.IntN(4)-1
		r1, err1 := d.mem.DueRuns(ctx, now, limit)
		r2, err2 := d.ref.DueRuns(ctx, now, limit)
		d.compare(what("DueRuns", now, limit), r1, err1, r2, err2)
	case 6, 7:
		var b store.Batch
		for range rng.IntN(4) {
			b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: d.runID(), Outcome: store.Outcome{
				Key: pick(rng, diffKeys), Kind: pick(rng, []string{"promise", "promise", "step", "child"}), Function: "f",
				Status: pick(rng, diffOutcomeStatuses), Value: d.value(), Error: pick(rng, []string{"", "boom"}),
				Attempts: rng.IntN(4), Seq: int64(rng.IntN(4)), Waited: rng.IntN(2) == 0, Idle: int64(rng.IntN(3)),
				WakeOrder: rng.IntN(3), VTime: int64(rng.IntN(9)), Deadline: int64(rng.IntN(9)),
				Orphaned: rng.IntN(5) == 0, UpdatedAt: d.maybeTS(),
			}})
		}
		for range rng.IntN(3) {
			b.Runs = append(b.Runs, store.Run{ID: d.runID(), ModuleHash: pick(rng, diffHashes), Status: pick(rng, diffStatuses),
				Result: d.value(), Error: pick(rng, []string{"", "bad"}), WakeAt: int64(rng.IntN(6)),
				Deadline: 99, Cancel: "ignored", Input: []byte("ignored"), UpdatedAt: d.maybeTS()})
		}
		for range rng.IntN(2) {
			b.Settlements = append(b.Settlements, store.Settlement{RunID: d.runID(), Key: pick(rng, diffKeys),
				Status: pick(rng, diffOutcomeStatuses[1:]), Value: d.value(), CreatedAt: ts(rng.IntN(3))})
		}
		err1, err2 := d.mem.Commit(ctx, b), d.ref.Commit(ctx, b)
		// The backends may word (and wrap) a failure differently: SQLite
		// reports an outcome or settlement of an unknown run as a foreign
		// key violation, the memory store as store.ErrNotFound.
		if (err1 == nil) != (err2 == nil) {
			d.t.Errorf("%s: memory error %v, sqlite error %v", what("Commit", b), err1, err2)
		}
	case 8:
		st := store.Settlement{RunID: d.runID(), Key: pick(rng, diffKeys), Status: pick(rng, diffOutcomeStatuses[1:]),
			Value: d.value(), Error: pick(rng, []string{"", "no"}), CreatedAt: ts(rng.IntN(3))}
		if rng.IntN(10) == 0 {
			st.Status = "maybe"
		}
		d.compareErr(what("Settle", st), d.mem.Settle(ctx, st), d.ref.Settle(ctx, st))
	case 9:
		id := d.runID()
		s1, err1 := d.mem.Settlements(ctx, id)
		s2, err2 := d.ref.Settlements(ctx, id)
		d.compare(what("Settlements", id), s1, err1, s2, err2)
	case 10:
		id, reason := d.runID(), pick(rng, []string{"", "stop", "halt"})
		r1, err1 := d.mem.RequestCancel(ctx, id, reason)
		r2, err2 := d.ref.RequestCancel(ctx, id, reason)
		d.compare(what("RequestCancel", id, reason), r1, err1, r2, err2)
	case 11:
		id := d.runID()
		o1, err1 := d.mem.Outcomes(ctx, id)
		o2, err2 := d.ref.Outcomes(ctx, id)
		d.compare(what("Outcomes", id), o1, err1, o2, err2)
	}
}

// compareAll compares everything both stores hold.
func (d *differ) compareAll(what string) {
	ctx := d.t.Context()
	for _, id := range append(diffRuns, "ghost") {
		r1, err1 := d.mem.Run(ctx, id)
		r2, err2 := d.ref.Run(ctx, id)
		d.compare(what+": Run "+id, r1, err1, r2, err2)
		o1, err1 := d.mem.Outcomes(ctx, id)
		o2, err2 := d.ref.Outcomes(ctx, id)
		d.compare(what+": Outcomes "+id, o1, err1, o2, err2)
		s1, err1 := d.mem.Settlements(ctx, id)
		s2, err2 := d.ref.Settlements(ctx, id)
		d.compare(what+": Settlements "+id, s1, err1, s2, err2)
	}
	m1, err1 := d.mem.Modules(ctx)
	m2, err2 := d.ref.Modules(ctx)
	d.compare(what+": Modules", m1, err1, m2, err2)
	for now := range int64(7) {
		r1, err1 := d.mem.DueRuns(ctx, now, 0)
		r2, err2 := d.ref.DueRuns(ctx, now, 0)
		d.compare(fmt.Sprintf("%s: DueRuns(%d)", what, now), r1, err1, r2, err2)
	}
}

func (d *differ) compareErr(what string, err1, err2 error) {
	d.t.Helper()
	if errClass(err1) != errClass(err2) {
		d.t.Errorf("%s: memory error %v, sqlite error %v", what, err1, err2)
	}
}

func (d *differ) compare(what string, got any, err1 error, want any, err2 error) {
	d.t.Helper()
	d.compareErr(what, err1, err2)
	if g, w := d.norm(reflect.ValueOf(got)), d.norm(reflect.ValueOf(want)); !reflect.DeepEqual(g, w) {
		d.t.Errorf("%s:\n memory %+v\n sqlite %+v", what, g, w)
	}
}

func errClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, store.ErrNotFound):
		return "not found"
	case errors.Is(err, store.ErrConflict):
		return "conflict"
	}
	return "error"
}

// norm returns v as plain values comparable with reflect.DeepEqual: empty
// slices become nil, times set to now become "now", other times their unix
// nanoseconds.
func (d *differ) norm(v reflect.Value) any {
	switch {
	case !v.IsValid():
		return nil
	case v.Type() == reflect.TypeFor[time.Time]():
		t := v.Interface().(time.Time)
		if !t.Before(d.start) {
			return "now"
		}
		return t.UnixNano()
	case v.Kind() == reflect.Interface:
		return d.norm(v.Elem())
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		if v.Len() == 0 {
			return nil
		}
		return string(v.Bytes())
	case v.Kind() == reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = d.norm(v.Index(i))
		}
		return out
	case v.Kind() == reflect.Struct:
		out := map[string]any{}
		for i := range v.NumField() {
			out[v.Type().Field(i).Name] = d.norm(v.Field(i))
		}
		return out
	}
	return v.Interface()
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
