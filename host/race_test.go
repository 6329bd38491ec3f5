package host

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

var (
	raceWant = []string{"s2:slow-result", "f2:fast-result"}
	raceKeys = []string{"1", "t2.1", "t2.2", "t3.1", "t3.2"}
)

// The reference race, live and with eviction at every wait: right values,
// lineage keys, and every step body executed exactly once.
func TestRace(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictIdle, EvictAlways} {
		t.Run(string(evict), func(t *testing.T) {
			h := newTestHost(t, Config{Evict: evict})
			m := h.deploy(t, "./examples/race")
			r := h.runToEnd(t, m, "race", "null", "race-"+string(evict))
			if r.Status != store.RunCompleted {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			var got []string
			mustJSON(t, r.Result, &got)
			if !slices.Equal(got, raceWant) {
				t.Fatalf("result %q, want %q", got, raceWant)
			}
			outs := h.outcomes(t, r.ID)
			if ks := keysOf(outs); !slices.Equal(ks, raceKeys) {
				t.Fatalf("keys %q, want %q", ks, raceKeys)
			}
			for _, o := range outs {
				if o.Status != store.OutcomeOK {
					t.Errorf("key %s: status %s", o.Key, o.Status)
				}
			}
			bodies := h.c.bodiesOf(r.ID)
			for _, k := range []string{"t2.1", "t2.2", "t3.1", "t3.2"} {
				if bodies[k] != 1 {
					t.Errorf("step %s body ran %d times, want 1", k, bodies[k])
				}
			}
			execs := h.c.execs[r.ID]
			if evict == EvictAlways && execs < 2 {
				t.Errorf("EvictAlways: %d executions, want a replay (>= 2)", execs)
			}
			if evict == EvictNever && execs != 1 {
				t.Errorf("EvictNever: %d executions, want 1", execs)
			}
			// A verifying replay of the finished run reaches the same result
			// without running anything.
			rr, err := h.Replay(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if rr.Status != store.RunCompleted || string(rr.Result) != string(r.Result) {
				t.Fatalf("replay: %s %s, want %s", rr.Status, rr.Result, r.Result)
			}
			if n := len(h.c.bodiesOf(r.ID)); n != 4 {
				t.Fatalf("replay ran step bodies: %v", h.c.bodiesOf(r.ID))
			}
		})
	}
}

// The test above discriminates: with the shared per-run call-order counter
// of the reference bug and instant recovery of recorded outcomes on
// replay, the same workflow replays to the wrong values; lineage keys give
// the right ones under the same replay.
func TestRaceCounterMintingBreaksReplay(t *testing.T) {
	for _, tc := range []struct {
		minting sched.Minting
		right   bool
	}{{sched.MintCounter, false}, {sched.MintLineage, true}} {
		t.Run(fmt.Sprint(tc.minting), func(t *testing.T) {
			h := newTestHostHooks(t, Config{Evict: EvictNever}, testHooks{minting: tc.minting, replayInline: true})
			m := h.deploy(t, "./examples/race")
			r := h.runToEnd(t, m, "race", "null", "race")
			var live []string
			mustJSON(t, r.Result, &live)
			if !slices.Equal(live, raceWant) {
				t.Fatalf("live result %q, want %q", live, raceWant)
			}
			rr, err := h.Replay(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			mustJSON(t, rr.Result, &got)
			if slices.Equal(got, raceWant) != tc.right {
				t.Fatalf("replay with minting %v returned %q (live %q)", tc.minting, got, live)
			}
			t.Logf("replay: %q", got)
		})
	}
}
