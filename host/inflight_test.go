package host

import (
	"context"
	"strings"
	"testing"

	"github.com/skeinrun/skein/store"
)

// TestInFlightAtEndIsLegal: a run that ends while a task's step body is
// still running (the task lost a select to a timer) records that step
// pending in the commit that ends it, so a verifying replay of the ended
// run (Replay, and the checker's last crash point) finds the op it
// issues; before, the check failed it ("expected only recorded ops, got
// step "compute" at key "worker.1", which the journal does not record").
func TestInFlightAtEndIsLegal(t *testing.T) {
	r := check(t, "./testdata/workflows/inflight", CheckOptions{Workflow: "lost", Schedules: 20})
	if !r.OK() {
		t.Fatalf("the check fails a run that ended with a step in flight:\n%s", details(r))
	}
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

// TestOpOnlyOnReplayDiverges: what the rule above allows is exactly the
// ops the live run issued: a step that only a replay issues (a step body
// set workflow state, and a replay does not run the body) is still
// nondeterminism, found at the verifying replay.
func TestOpOnlyOnReplayDiverges(t *testing.T) {
	r := check(t, "./testdata/workflows/inflight", CheckOptions{Workflow: "broken", Schedules: 5})
	if r.OK() || len(r.Divergences) == 0 {
		t.Fatalf("the check passed a workflow that issues a step only on replay:\n%s", details(r))
	}
	d := r.Divergences[0]
	if !strings.Contains(d.Got, `step "only-on-replay" at key "2", which the journal does not record`) {
		t.Errorf("divergence %+v; want the step only the replay issued", d)
	}
}
