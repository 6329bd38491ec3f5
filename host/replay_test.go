package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
)

// Four tasks, three steps each, seeded real waits inside the step bodies,
// appending to a slice the tasks share. The live order varies with the
// seed; a replay returns exactly the live order; and a crash after any
// number k of recorded outcomes replays the first k exactly before going
// on live.
func TestInterleaveReplayExact(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	m := h.deploy(t, "./testdata/workflows/probe")
	ctx := context.Background()
	orders := map[string]bool{}
	seeds := 8
	if testing.Short() {
		seeds = 3
	}
	for seed := 1; seed <= seeds; seed++ {
		input := fmt.Sprintf(`{"seed":%d}`, seed)
		r := h.runToEnd(t, m, "interleave", input, fmt.Sprintf("live-%d", seed))
		if r.Status != store.RunCompleted {
			t.Fatalf("seed %d: %s %s", seed, r.Status, r.Error)
		}
		orders[string(r.Result)] = true
		rr, err := h.Replay(ctx, r.ID)
		if err != nil {
			t.Fatalf("seed %d: replay: %v", seed, err)
		}
		if string(rr.Result) != string(r.Result) {
			t.Fatalf("seed %d: replay %s, live %s", seed, rr.Result, r.Result)
		}
		journal := settled(h.outcomes(t, r.ID))
		for k := 0; k < len(journal); k++ {
			cut := fmt.Sprintf("cut-%d-%d", seed, k)
			crashAfter(t, h, r, journal, k, cut)
			cr, err := h.Drive(ctx, cut, DriveOptions{WaitTimers: true})
			if err != nil {
				t.Fatalf("seed %d cut %d: %v", seed, k, err)
			}
			if cr.Status != store.RunCompleted {
				t.Fatalf("seed %d cut %d: %s %s", seed, k, cr.Status, cr.Error)
			}
			after := settled(h.outcomes(t, cut))
			for i := 0; i < k; i++ {
				if d := diffOutcome(journal[i], after[i]); d != "" {
					t.Fatalf("seed %d cut %d: recorded outcome %d changed: %s", seed, k, i, d)
				}
			}
			// The continued run is itself replay-exact.
			rr, err := h.Replay(ctx, cut)
			if err != nil {
				t.Fatalf("seed %d cut %d: replay: %v", seed, k, err)
			}
			if string(rr.Result) != string(cr.Result) {
				t.Fatalf("seed %d cut %d: replay %s, run %s", seed, k, rr.Result, cr.Result)
			}
			// The steps recorded before the cut did not run again.
			for key, n := range h.c.bodiesOf(cut) {
				for _, o := range journal[:k] {
					if o.Key == key && n > 0 {
						t.Fatalf("seed %d cut %d: recorded step %s ran again", seed, k, key)
					}
				}
			}
		}
	}
	if len(orders) < 2 {
		t.Fatalf("the live order never varied over %d seeds: %v", seeds, orders)
	}
}

// settled returns the settled outcomes in settle order.
func settled(os []store.Outcome) []store.Outcome {
	var out []store.Outcome
	for _, o := range os {
		if o.Status != store.OutcomePending {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b store.Outcome) int { return int(a.Seq - b.Seq) })
	return out
}

func diffOutcome(a, b store.Outcome) string {
	if a.Key != b.Key || a.Function != b.Function || a.Status != b.Status || string(a.Value) != string(b.Value) ||
		a.Error != b.Error || a.Seq != b.Seq || a.Waited != b.Waited || a.Idle != b.Idle || a.WakeOrder != b.WakeOrder {
		return fmt.Sprintf("%+v != %+v", a, b)
	}
	return ""
}

// crashAfter creates run id as a copy of r whose store holds only the
// first k settled outcomes of journal, as if the process died then.
// Timers issued before the cut keep their pending record with the
// deadline, as they were written when issued.
func crashAfter(t *testing.T, h *testHost, r store.Run, journal []store.Outcome, k int, id string) {
	t.Helper()
	ctx := context.Background()
	c := r
	c.ID, c.Status, c.Result, c.Error = id, store.RunRunning, nil, ""
	if _, created, err := h.st.CreateRun(ctx, c); err != nil || !created {
		t.Fatalf("create %s: %v %v", id, created, err)
	}
	var b store.Batch
	for i, o := range journal {
		if i >= k {
			if o.Kind != "sleep" {
				continue
			}
			o.Status, o.Value, o.Seq, o.Waited, o.Idle, o.WakeOrder, o.VTime = store.OutcomePending, nil, 0, false, 0, 0, 0
		}
		b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: id, Outcome: o})
	}
	if err := h.st.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// What workflow code sees of time, randomness and map order is the same
// live and on replay; the filesystem and the environment are empty.
// crypto/rand differs for another run seed. math/rand and map order come
// from the seed the Go runtime reads as it starts: per run for a command
// module, per module for a reactor started from its snapshot
// (abi/README.md, "Start-up and snapshots").
func TestSandboxDeterminism(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictAlways})
	m := h.deploy(t, "./testdata/workflows/probe")
	ctx := context.Background()
	results := map[uint64]string{}
	for _, seed := range []uint64{7, 8} {
		r, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "sandbox", ID: fmt.Sprint("sb-", seed), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		r, err = h.Drive(ctx, r.ID, DriveOptions{WaitTimers: true})
		if err != nil || r.Status != store.RunCompleted {
			t.Fatalf("%v %s %s", err, r.Status, r.Error)
		}
		if h.c.execs[r.ID] < 2 {
			t.Fatalf("seed %d: no replay happened (%d executions)", seed, h.c.execs[r.ID])
		}
		rr, err := h.Replay(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(rr.Result) != string(r.Result) {
			t.Fatalf("seed %d: replay\n%s\nlive\n%s", seed, rr.Result, r.Result)
		}
		var s string
		mustJSON(t, r.Result, &s)
		if !strings.Contains(s, "env=0 args=1") || !strings.Contains(s, "fs=true") {
			t.Fatalf("sandbox leaks: %s", s)
		}
		results[seed] = s
	}
	line := func(s, prefix string) string {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		return ""
	}
	perModule := snapshotted(t, h, m.Hash)
	if want := wasmbuild.Reactor() && snapshotsTaken(); perModule != want {
		t.Fatalf("Snapshotted() = %v on engine %q, want %v", perModule, engine.Name(h.eng), want)
	}
	for _, p := range []string{"rand=", "map=", "crypto="} {
		same := line(results[7], p) == line(results[8], p)
		switch {
		case p == "crypto=" || !perModule:
			if same {
				t.Errorf("%s is the same for two run seeds: %s", p, line(results[7], p))
			}
		case !same:
			t.Errorf("%s differs between two runs of a snapshotted module: %s, %s", p, line(results[7], p), line(results[8], p))
		}
	}
}

// snapshotted reports whether instances of the compiled module hash start
// from its snapshot (a reactor, as wasmbuild builds by default, on an
// engine and system that take snapshots).
func snapshotted(t *testing.T, h *testHost, hash string) bool {
	t.Helper()
	cm, err := h.modules.Compiled(context.Background(), hash)
	if err != nil {
		t.Fatal(err)
	}
	defer h.modules.Release(cm)
	return cm.Engine().Snapshotted()
}
