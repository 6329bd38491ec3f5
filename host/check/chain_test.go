package check

import (
	"fmt"
	"strings"
	"testing"
)

// TestCheckNamesTheChainRun: a divergence in a successor of a run that
// continued as new names that run of the chain ({run}~3) and its
// position, and the reproduction (Schedule, ChainRun, CrashAt) replays
// that run's crash point alone and finds the same divergence.
func TestCheckNamesTheChainRun(t *testing.T) {
	in := []byte(`{"per":2,"total":10}`)
	r := check(t, "./testdata/workflows/continue", Options{Workflow: "drift", Input: in, Schedules: 2})
	if len(r.Divergences) == 0 {
		t.Fatalf("no divergence in the third run:\n%s", details(r))
	}
	for _, d := range r.Divergences {
		if d.ChainRun != 3 || !strings.HasSuffix(d.Run, "~3") {
			t.Fatalf("divergence %+v; want it in the chain's third run", d)
		}
	}
	d := r.Divergences[0]
	if out := details(r); !strings.Contains(out, fmt.Sprintf("reproduce: --seed 1 --schedule %d --chain-run 3 --crash-at %d", d.Schedule, d.CrashAt)) {
		t.Errorf("the reproduction does not name the chain's run:\n%s", out)
	}
	again := check(t, "./testdata/workflows/continue", Options{Workflow: "drift", Input: in, Schedules: 2,
		Schedule: d.Schedule, ChainRun: d.ChainRun, CrashAt: d.CrashAt})
	if again.Replays != 1 || len(again.Divergences) != 1 || again.Divergences[0].Got != d.Got {
		t.Fatalf("the reproduction replayed %d crash points, found %+v; want the one divergence %+v", again.Replays, again.Divergences, d)
	}
}
