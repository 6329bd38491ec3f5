package host

import (
	"context"
	"testing"

	"github.com/skeinrun/skein/store"
)

// TestInFlightAtEndIsLegal: a run that ends while a task's step body is
// still running (the task lost a select to a timer) records that step
// pending in the commit that ends it, so a verifying replay of the ended
// run (Replay, and the checker's last crash point: host/check's
// TestCheckInFlightAtEndIsLegal) finds the op it issues.
func TestInFlightAtEndIsLegal(t *testing.T) {
	for name, evict := range map[string]Evict{"never": EvictNever, "always": EvictAlways} {
		h := newTestHost(t, Config{Evict: evict})
		m := h.deploy(t, "./testdata/workflows/inflight")
		run := h.runToEnd(t, m, "lost", "{}", "lost-"+name)
		if run.Status != store.RunCompleted || string(run.Result) != "0" {
			t.Fatalf("%s: %s %s %q; want completed 0 (the timer wins)", name, run.Status, run.Result, run.Error)
		}
		var step *store.Outcome
		for _, o := range h.outcomes(t, run.ID) {
			if o.Key == "worker.1" {
				step = &o
			}
		}
		if step == nil || step.Status != store.OutcomePending || step.Kind != "step" || step.Function != "compute" {
			t.Errorf("%s: the journal's record of the step in flight: %+v; want step compute pending", name, step)
		}
		rr, err := h.Replay(context.Background(), run.ID)
		if err != nil || rr.Status != store.RunCompleted || string(rr.Result) != "0" {
			t.Errorf("%s: Replay of the ended run: %+v, %v; want completed 0", name, rr, err)
		}
	}
}
