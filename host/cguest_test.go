package host_test

// The C guests of testdata/c, written from abi/README.md and abi/skein.h
// alone, through the real host: live, with a replay at every wait, and
// under the checker.

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/check"
	"github.com/skeinrun/skein/internal/testing/guestbuild"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/skeintest"
	"github.com/skeinrun/skein/store"
)

// The reference race as a C guest: the keys and result of the Go race, in
// every eviction mode.
func TestCRace(t *testing.T) {
	wasm := guestbuild.C(t, "testdata/c/race.c")
	for _, evict := range hosttest.Evicts {
		r, outs, execs := hosttest.RunModule(t, wasm, "race", "null", evict)
		if r.Status != store.RunCompleted || string(r.Result) != `["s2:slow-result","f2:fast-result"]` {
			t.Fatalf("%s: %s result %s (%s)", evict, r.Status, r.Result, r.Error)
		}
		if evict == host.EvictAlways && execs < 2 {
			t.Fatalf("%s: %d execution(s), want a replay at the timer", evict, execs)
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

func TestCRaceCheck(t *testing.T) {
	skeintest.Check(t, guestbuild.C(t, "testdata/c/race.c"), "race", "null", skeintest.Options{ScheduleIndependent: true})
}

// cOpsWant is the result of testdata/c/ops.c's ops workflow with input
// {"x":1} and an activity echo that returns its input.
const cOpsWant = `{"step":true,"call":{"x":1},"select":1,"sleep":null,"child":42,"spawn":1,"branch":"b",
	"retry":"2:flaky","iderror":"2:dot","outcomes":"2,3,5,8,body,fan.0.1,fan.1.1,t6.1","canceled":0}`

func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("result %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(a, b)
}

func echo(_ context.Context, in []byte) ([]byte, error) { return in, nil }

// Every op kind and host function from C, in every eviction mode, with the
// records the host kept.
func TestCOps(t *testing.T) {
	wasm := guestbuild.C(t, "testdata/c/ops.c")
	for _, evict := range hosttest.Evicts {
		e := hosttest.NewModule(t, wasm, "ops", evict)
		e.Host.RegisterActivity("echo", echo)
		r := e.Drive(e.Start("ops", `{"x":1}`).ID)
		if r.Status != store.RunCompleted || !sameJSON(t, r.Result, cOpsWant) {
			t.Fatalf("%s: %s %s %s", evict, r.Status, r.Result, r.Error)
		}
		outs := e.Verify(r)
		if o := hosttest.Outcome(t, outs, "8"); o.Function != "flaky" || o.Attempts != 2 || o.Error != "flaky" {
			t.Fatalf("%s: retried step %+v", evict, o)
		}
		if o := hosttest.Outcome(t, outs, "approval"); o.Status != store.OutcomePending || o.Kind != "promise" {
			t.Fatalf("%s: promise %+v", evict, o)
		}
		child, err := e.Store.Run(context.Background(), r.ID+".5")
		if err != nil || child.Status != store.RunCompleted || string(child.Result) != "42" || child.Parent != r.ID {
			t.Fatalf("%s: child run %+v %v", evict, child, err)
		}
	}
}

func TestCOpsCheck(t *testing.T) {
	rep := skeintest.Check(t, guestbuild.C(t, "testdata/c/ops.c"), "ops", `{"x":1}`, skeintest.Options{Schedules: 50,
		ScheduleIndependent: true, LeavePromises: true, Activities: map[string]activity.Func{"echo": echo}})
	if len(rep.Ends) != 1 || !sameJSON(t, []byte(rep.Ends[0].Result), cOpsWant) {
		t.Fatalf("ends %+v", rep.Ends)
	}
}

// A C run that ends while a task's step body is still running passes the
// check; a step that only a replay issues still fails it
// (host/inflight_test.go has the same in Go).
func TestCInFlightAtEnd(t *testing.T) {
	path := guestbuild.C(t, "testdata/c/inflight.c")
	rep := skeintest.Check(t, path, "lost", "null", skeintest.Options{Schedules: 20})
	if len(rep.Ends) != 1 || rep.Ends[0].Result != "0" {
		t.Fatalf("ends %+v; want the timer's index, 0", rep.Ends)
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := check.Module(context.Background(), wasm, check.Options{Workflow: "broken", Schedules: 5})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || len(r.Divergences) == 0 || !strings.Contains(r.Divergences[0].Got, `"only-on-replay"`) {
		t.Fatalf("the check of a step issued only on replay: %s %+v", r.Summary(), r.Divergences)
	}
}
