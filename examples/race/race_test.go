package main

import (
	"slices"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/hosttest"
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
