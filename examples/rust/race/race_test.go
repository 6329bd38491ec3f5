// Package race tests the Rust race (main.rs) through the real host: the
// same assertions as the Go race's tests (examples/race).
package race

import (
	"slices"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/guestbuild"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/skeintest"
)

func TestRustRace(t *testing.T) {
	wasm := guestbuild.Rust(t, "examples/rust/race")
	for _, evict := range hosttest.Evicts {
		r, outs, execs := hosttest.RunModule(t, wasm, "race", "null", evict)
		if evict == host.EvictAlways && execs < 2 {
			t.Fatalf("%s: %d execution(s), want a replay at the timer", evict, execs)
		}
		if string(r.Result) != `["s2:slow-result","f2:fast-result"]` {
			t.Fatalf("%s: %s result %s (%s)", evict, r.Status, r.Result, r.Error)
		}
		keys := hosttest.Keys(outs)
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"1", "t2.1", "t2.2", "t3.1", "t3.2"}) {
			t.Fatalf("%s: keys %q", evict, keys)
		}
		for key, fn := range map[string]string{"1": "sleep", "t2.1": "slow", "t2.2": "mark", "t3.1": "fast", "t3.2": "mark"} {
			if o := hosttest.Outcome(t, outs, key); o.Function != fn {
				t.Fatalf("%s: key %s has function %q, want %q", evict, key, o.Function, fn)
			}
		}
	}
}

// The Rust race replays exactly from every crash point under 200 seeded
// schedules, and its ids and result never depend on timing.
func TestRustRaceCheck(t *testing.T) {
	skeintest.Check(t, guestbuild.Rust(t, "examples/rust/race"), "race", "null", skeintest.Options{ScheduleIndependent: true})
}
