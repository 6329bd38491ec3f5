//go:build wasmtime

package host

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/skeinrun/skein/internal/limitflags"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// engineHost opens a host on engine eng over st, the store another
// host shares.
func engineHost(t *testing.T, st store.Store, eng string, sim *Simulation) *testHost {
	t.Helper()
	ctx := context.Background()
	h, err := newHost(ctx, Config{Store: st, Engine: eng, Evict: EvictIdle, CacheDir: cacheDir, LimitHint: limitflags.Flag, Simulation: sim}, withTestDefaults(testHooks{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(ctx) })
	return &testHost{Host: h, st: st, c: &counters{bodies: map[string]int{}, execs: map[string]int{}}}
}

// journal is a run's outcomes in settle order.
func journal(t *testing.T, h *testHost, run string) []store.Outcome {
	t.Helper()
	outs := h.outcomes(t, run)
	slices.SortFunc(outs, func(a, b store.Outcome) int { return int(a.Seq - b.Seq) })
	return outs
}

// TestCrossEngineReplay: a run executed on one engine replays on the
// other from the same store, with the same result and its journal
// untouched, both ways; and the same run, seed and simulated schedule
// executed on each engine records the same journal, record for record.
func TestCrossEngineReplay(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hosts := map[string]*testHost{EngineWazero: engineHost(t, st, EngineWazero, nil), EngineWasmtime: engineHost(t, st, EngineWasmtime, nil)}
	cases := []struct{ pkg, workflow, input string }{
		{"./examples/sequence", "sequence", `{"n":40}`},
		{"./examples/race", "race", "null"},
		{"./testdata/workflows/escape", "clock", "null"}, // virtual clocks, seeded randomness, recorded real time
		{"./testdata/workflows/escape", "env", "null"},
		{"./testdata/workflows/escape", "files", "null"},
	}
	for _, from := range []string{EngineWazero, EngineWasmtime} {
		to := EngineWasmtime
		if from == EngineWasmtime {
			to = EngineWazero
		}
		for _, c := range cases {
			id := from + "-" + c.workflow
			m := hosts[from].deploy(t, c.pkg)
			hosts[to].deploy(t, c.pkg)
			r := hosts[from].runToEnd(t, m, c.workflow, c.input, id)
			if r.Status != store.RunCompleted {
				t.Fatalf("%s on %s: %s %q", c.workflow, from, r.Status, r.Error)
			}
			before := journal(t, hosts[from], id)
			rr, err := hosts[to].Replay(ctx, id)
			if err != nil {
				t.Fatalf("%s run on %s, replayed on %s: %v", c.workflow, from, to, err)
			}
			if rr.Status != store.RunCompleted || !jsonEqual(rr.Result, r.Result) {
				t.Errorf("%s run on %s, replayed on %s: %s %s %q; live %s", c.workflow, from, to, rr.Status, rr.Result, rr.Error, r.Result)
			}
			if after := journal(t, hosts[to], id); !slices.EqualFunc(before, after, sameRecord) {
				t.Errorf("%s: the replay on %s changed the journal:\n%+v\n%+v", c.workflow, to, before, after)
			}
			t.Logf("%s: run on %s (%d records), replayed on %s: %s", c.workflow, from, len(before), to, rr.Result)
		}
	}

	// The same run on each engine, under one simulated schedule: the
	// journals are equal record for record.
	var journals [][]store.Outcome
	for _, eng := range []string{EngineWazero, EngineWasmtime} {
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), eng+".db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		h := engineHost(t, st, eng, &Simulation{Seed: 7})
		m := h.deploy(t, "./examples/race")
		r := h.runToEnd(t, m, "race", "null", "sim-race")
		if r.Status != store.RunCompleted {
			t.Fatalf("race on %s: %s %q", eng, r.Status, r.Error)
		}
		j := journal(t, h, "sim-race")
		for i := range j { // virtual times from the run's start, which is real time
			j[i].VTime -= r.StartTime
			if j[i].Deadline != 0 {
				j[i].Deadline -= r.StartTime
			}
		}
		journals = append(journals, j)
	}
	if len(journals[0]) == 0 || !slices.EqualFunc(journals[0], journals[1], sameRecord) {
		t.Errorf("the journals differ:\nwazero:   %+v\nwasmtime: %+v", journals[0], journals[1])
	}
}

// sameRecord compares two records but for when they were written
// (UpdatedAt).
func sameRecord(a, b store.Outcome) bool {
	return a.Key == b.Key && a.Kind == b.Kind && a.Function == b.Function && a.Status == b.Status &&
		string(a.Value) == string(b.Value) && a.Error == b.Error && a.Attempts == b.Attempts && a.Seq == b.Seq &&
		a.Waited == b.Waited && a.Idle == b.Idle && a.WakeOrder == b.WakeOrder && a.VTime == b.VTime &&
		a.Deadline == b.Deadline && a.Orphaned == b.Orphaned
}
