package check

import (
	"strings"
	"testing"

	"github.com/skeinrun/skein/host/internal/sched"
)

// A step named after the winner of a Select is issued as different ops at
// one key in different schedules; the journal records the choice, so the
// run replays exactly, and the check passes, naming the choice.
func TestCheckChoiceIsNotARace(t *testing.T) {
	for _, tc := range []struct {
		workflow, key, task, chose string // chose: the keys of the two futures, either way round
	}{
		{"pick", "3", "", "1 2"},
		{"pick_in_task", "2", "t1", "t1.1 t1.2"},
		{"mixed", "5", "", "3 4"},
	} {
		r := check(t, "./testdata/workflows/choice", Options{Workflow: tc.workflow, Schedules: 40})
		out := details(r)
		if !r.OK() || len(r.IDConflicts) != 0 || len(r.ChoiceDependent) != 1 || len(r.Ends) != 2 {
			t.Fatalf("%s: want a pass with one choice-dependent key and two ends:\n%s", tc.workflow, out)
		}
		c := r.ChoiceDependent[0]
		ops := c.A.Function + " " + c.B.Function
		if c.Key != tc.key || (ops != "after_a after_b" && ops != "after_b after_a") || c.A.Task != "" || c.B.Task != "" {
			t.Errorf("%s: %+v, want key %s: after_a and after_b of the root", tc.workflow, c, tc.key)
		}
		f := strings.Fields(tc.chose)
		if chose := c.Choice.A + " " + c.Choice.B; c.Choice.Task != tc.task || c.Choice.Select != 1 ||
			(chose != f[0]+" "+f[1] && chose != f[1]+" "+f[0]) {
			t.Errorf("%s: choice %+v, want select 1 of task %q choosing %s", tc.workflow, c.Choice, tc.task, tc.chose)
		}
		for _, want := range []string{"ids schedule-independent up to recorded choices (1 keys follow a Select)",
			`id follows a recorded choice: key "` + tc.key + `" is step "after_`, "after " + c.Choice.String() + " chose "} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: report lacks %q:\n%s", tc.workflow, want, out)
			}
		}
	}
}

// The shared-counter policy still fails a workflow that makes a choice:
// the chains' ids differ between schedules with no differing choice
// before them, and the step after the choice is compared only with ops
// that followed the same Select.
func TestCheckCounterMintingWithChoices(t *testing.T) {
	r := check(t, "./testdata/workflows/choice", Options{Workflow: "mixed", Schedules: 40, minting: sched.MintCounter})
	if r.OK() || len(r.IDConflicts) == 0 || !strings.Contains(r.Summary(), "ids DEPEND ON THE SCHEDULE") {
		t.Fatalf("counter minting passed the check:\n%s", details(r))
	}
	for _, c := range r.IDConflicts {
		if c.A.Task == c.B.Task && strings.HasPrefix(c.A.Function, "after_") && strings.HasPrefix(c.B.Function, "after_") {
			t.Errorf("conflict %+v: the two steps after the choice differ by the choice, not by timing", c)
		}
	}
}
