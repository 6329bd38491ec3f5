package main

import (
	"slices"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
)

func TestRace(t *testing.T) {
	for _, evict := range []host.Evict{host.EvictNever, host.EvictAlways} {
		r, outs := hosttest.Run(t, "./examples/race", "race", "null", evict)
		if string(r.Result) != `["s2:slow-result","f2:fast-result"]` {
			t.Fatalf("%s: result %s (%s)", evict, r.Result, r.Error)
		}
		keys := hosttest.Keys(outs)
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"1", "t2.1", "t2.2", "t3.1", "t3.2"}) {
			t.Fatalf("%s: keys %q", evict, keys)
		}
	}
}

// The race replays exactly from every crash point under 200 seeded
// schedules, and its ids and result never depend on timing.
func TestRaceCheck(t *testing.T) {
	skeintest.Check(t, wasmbuild.Build(t, "./examples/race"), "race", "null", skeintest.Options{ScheduleIndependent: true})
}
