package check

import (
	"strings"
	"testing"
)

// TestCheckInFlightAtEndIsLegal: a run that ends while a task's step body
// is still running (the task lost a select to a timer) passes the check:
// its journal records that step pending, so the verifying replay (the
// last crash point) finds the op it issues (host's
// TestInFlightAtEndIsLegal has the record and the Replay); before, the
// check failed it ("expected only recorded ops, got step "compute" at key
// "worker.1", which the journal does not record").
func TestCheckInFlightAtEndIsLegal(t *testing.T) {
	r := check(t, "./testdata/workflows/inflight", Options{Workflow: "lost", Schedules: 20})
	if !r.OK() {
		t.Fatalf("the check fails a run that ended with a step in flight:\n%s", details(r))
	}
}

// TestOpOnlyOnReplayDiverges: what the rule above allows is exactly the
// ops the live run issued: a step that only a replay issues (a step body
// set workflow state, and a replay does not run the body) is still
// nondeterminism, found at the verifying replay.
func TestOpOnlyOnReplayDiverges(t *testing.T) {
	r := check(t, "./testdata/workflows/inflight", Options{Workflow: "broken", Schedules: 5})
	if r.OK() || len(r.Divergences) == 0 {
		t.Fatalf("the check passed a workflow that issues a step only on replay:\n%s", details(r))
	}
	d := r.Divergences[0]
	if !strings.Contains(d.Got, `step "only-on-replay" at key "2", which the journal does not record`) {
		t.Errorf("divergence %+v; want the step only the replay issued", d)
	}
}
