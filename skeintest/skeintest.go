// Package skeintest proves, inside `go test` and without any server, that
// a skein workflow replays exactly and that its ids do not depend on
// timing.
//
//	func TestOrderWorkflow(t *testing.T) {
//		skeintest.Check(t, "order.wasm", "order", `{"id": 7}`, skeintest.Options{})
//	}
//
// Check runs the workflow under many seeded schedules in a simulation
// (virtual time only, an in-memory store, seeded durations for every step
// body, wait and activity), replays each schedule's run from every crash
// point of its journal and requires the same journal and end, and
// compares the schedules: a key that names different ops in different
// schedules is an id that depends on timing, unless a recorded choice (a
// Select that chose differently in both) came before it, which is only
// logged (check.Report.ChoiceDependent). Any other fails the test,
// with a reproduction (the flags of `skein check`). A result that depends
// on the schedule is legitimate (skein.Select) and only logged.
//
// CheckUpgrade proves, before a deploy, that the live runs of a store
// replay against a new version of the module (docs/upgrades.md).
package skeintest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/check"
)

// Options tune Check; the zero value checks 200 schedules of seed 1.
type Options struct {
	// Schedules is the number of seeded schedules; default 200.
	Schedules int
	// Seed chooses the schedules; default 1.
	Seed uint64
	// Activities are fakes by name for the activities the workflow calls;
	// an activity without one returns JSON null.
	Activities map[string]activity.Func
	// StepTime and ActivityTime bound the seeded virtual durations of
	// step bodies and activity attempts; default 100ms each.
	StepTime, ActivityTime time.Duration
	// ScheduleIndependent also fails the test when the run's end (status,
	// result, error) differs between schedules.
	ScheduleIndependent bool
	// Promises settle the workflow's external promises at these keys
	// (the part of a promise's full id after "{run}.") with a fixed
	// outcome. The check settles the others itself, in turn by schedule:
	// with a value generated from the promise's schema, with an error, or
	// not at all, so that the code after every promise is checked;
	// LeavePromises leaves them pending instead (check.Options).
	Promises      map[string]host.PromiseValue
	LeavePromises bool
	// Budget bounds the time of the check: when replaying every crash
	// point of every schedule would take longer, the crash points are
	// sampled to fit, and the report says how many were replayed. Zero
	// means DefaultBudget; a negative budget replays every crash point.
	Budget time.Duration
}

// DefaultBudget is Options.Budget's default: a check fits in it.
const DefaultBudget = 30 * time.Second

// Check checks workflow of the module at wasmPath with input (JSON; ""
// means null) and fails t on any divergence or timing-dependent id. It
// returns the report for further assertions. Compiled modules are cached
// in the user cache folder (skein-wazero), so a second run is fast.
func Check(t testing.TB, wasmPath, workflow, input string, o Options) *check.Report {
	t.Helper()
	ctx, wasm, cache := setup(t, wasmPath)
	budget := o.Budget
	switch {
	case budget == 0:
		budget = DefaultBudget
	case budget < 0:
		budget = 0
	}
	r, err := check.Module(ctx, wasm, check.Options{Workflow: workflow, Input: []byte(input),
		Schedules: o.Schedules, Seed: o.Seed, Activities: o.Activities, StepTime: o.StepTime,
		ActivityTime: o.ActivityTime, CacheDir: cache, Promises: o.Promises, LeavePromises: o.LeavePromises, Budget: budget})
	if err != nil {
		t.Fatalf("skeintest: %v", err)
	}
	var details strings.Builder
	r.Details(&details)
	switch {
	case !r.OK():
		t.Errorf("skeintest: %s\n%s", r.Summary(), details.String())
	case o.ScheduleIndependent && len(r.Ends) > 1:
		t.Errorf("skeintest: %s\n%s", r.Summary(), details.String())
	case len(r.ChoiceDependent) > 0:
		t.Logf("skeintest: %s (%s)\n%s", r.Summary(), r.Elapsed.Round(time.Millisecond), details.String())
	default:
		t.Logf("skeintest: %s (%s)", r.Summary(), r.Elapsed.Round(time.Millisecond))
	}
	return r
}

// setup reads the module at wasmPath (failing t if it cannot) and returns
// the test's context, the module and the compilation cache folder (the
// user cache folder's skein-wazero, so a second run is fast).
func setup(t testing.TB, wasmPath string) (context.Context, []byte, string) {
	t.Helper()
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatalf("skeintest: %v", err)
	}
	cache := ""
	if dir, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(dir, "skein-wazero")
	}
	ctx := context.Background()
	if d, ok := t.(interface{ Context() context.Context }); ok {
		ctx = d.Context()
	}
	return ctx, wasm, cache
}
