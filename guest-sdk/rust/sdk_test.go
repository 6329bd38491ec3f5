// Package rust tests the Rust guest SDK (the crate in this folder): its
// unit tests natively with cargo, and its semantics through the real host
// with the workflows of testdata/rust/probe.
package rust

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/check"
	"github.com/skeinrun/skein/internal/lineage"
	"github.com/skeinrun/skein/internal/testing/guestbuild"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/skeintest"
	"github.com/skeinrun/skein/store"
)

const probe = "testdata/rust/probe"

// The crate's own tests: message layouts (the byte examples of
// abi/README.md), op options, JSON.
func TestRustSDKUnit(t *testing.T) {
	out := guestbuild.CargoTest(t, guestbuild.RustSDK)
	if !regexp.MustCompile(`test result: ok\. [1-9][0-9]* passed`).MatchString(out) {
		t.Fatalf("cargo test ran no tests:\n%s", out)
	}
}

func result(t *testing.T, r store.Run) map[string]string {
	t.Helper()
	if r.Status != store.RunCompleted {
		t.Fatalf("run %s: %s %s", r.Workflow, r.Status, r.Error)
	}
	var m map[string]string
	if err := json.Unmarshal(r.Result, &m); err != nil {
		t.Fatalf("result %s: %v", r.Result, err)
	}
	return m
}

// An explicit empty name is an id error of every op kind, before anything
// is issued, with the host's words (lineage) and the task's scope: the
// same as the Go SDK (host/names_test.go).
func TestRustEmptyNameIsIDError(t *testing.T) {
	wasm := guestbuild.Rust(t, probe)
	text := func(scope string) string {
		e := &lineage.StepIDError{Scope: scope, Rule: lineage.RuleEmpty}
		return lineage.RuleEmpty + "|" + scope + "|" + e.Error()
	}
	want := map[string]string{"in-task": text("t2")}
	for _, op := range []string{"step", "go", "parallel", "sleep", "promise", "call", "child"} {
		want[op] = text("")
	}
	for _, evict := range hosttest.Evicts {
		r, outs, _ := hosttest.RunModule(t, wasm, "emptyname", "null", evict)
		if got := result(t, r); !maps(got, want) {
			t.Fatalf("%s:\n got %q\nwant %q", evict, got, want)
		}
		if keys := hosttest.Keys(outs); !slices.Equal(keys, []string{"1"}) || outs[0].Function != "after" {
			t.Fatalf("%s: recorded %q, want only the step \"after\" at key 1", evict, keys)
		}
	}
}

// Every other naming rule, as host/identity_test.go's TestNameRules checks
// for the Go SDK.
func TestRustNameRules(t *testing.T) {
	r, outs, _ := hosttest.RunModule(t, guestbuild.Rust(t, probe), "badnames", "null", host.EvictNever)
	want := map[string]string{
		"dot": "dot", "space": "whitespace", "tab": "whitespace", "numeric": "numeric", "task": "task-segment",
		"long": "too-long", "max": "ok", "first": "ok", "dup": "duplicate", "fanout-step": "ok",
		"fanout-fork": "duplicate", "branches": "ok", "go": "dot", "sleep": "numeric",
	}
	if got := result(t, r); !maps(got, want) {
		t.Fatalf("rules\n got %v\nwant %v", got, want)
	}
	keys := hosttest.Keys(outs)
	slices.Sort(keys)
	if want := []string{"dup", "fan2.0.same", "fan2.1.same", "fanout", strings.Repeat("y", 300)}; !slices.Equal(keys, want) {
		t.Fatalf("recorded %q, want %q", keys, want)
	}
}

// opsWant is what the probe's ops workflow returns when the activity echo
// returns call.
func opsWant(call string) map[string]string {
	return map[string]string{
		"step": "true", "call": call, "select": "1 approval", "sleep": "null", "child": "42", "spawn": "2",
		"parallel":      `fan ["0", "10", "20"]`,
		"retry":         `Err(Failed("flaky"))`,
		"non-retryable": `Err(Failed("fatal"))`,
		"outcomes":      "2,3,5,8,9,body,fan.0.1,fan.1.1,fan.2.1,t6.1",
		"err":           "Ok(())", "virtual-time": "true",
	}
}

// Every op kind through the real host, in every eviction mode, and the
// keys and attempts the host recorded.
func TestRustOps(t *testing.T) {
	wasm := guestbuild.Rust(t, probe)
	for _, evict := range hosttest.Evicts {
		e := hosttest.NewModule(t, wasm, "probe", evict)
		e.Host.RegisterActivity("echo", func(_ context.Context, in []byte) ([]byte, error) { return in, nil })
		r := e.Drive(e.Start("ops", `{"x":1}`).ID)
		if got, want := result(t, r), opsWant(`{"x":1}`); !maps(got, want) {
			t.Fatalf("%s:\n got %q\nwant %q", evict, got, want)
		}
		outs := e.Verify(r)
		if o := hosttest.Outcome(t, outs, "8"); o.Function != "flaky" || o.Attempts != 2 || o.Error != "flaky" {
			t.Fatalf("%s: retried step: %+v", evict, o)
		}
		if o := hosttest.Outcome(t, outs, "9"); o.Function != "fatal" || o.Attempts != 1 {
			t.Fatalf("%s: non-retryable step: %+v", evict, o)
		}
		if o := hosttest.Outcome(t, outs, "approval"); o.Status != store.OutcomePending {
			t.Fatalf("%s: the promise is %s", evict, o.Status)
		}
		child, err := e.Store.Run(context.Background(), r.ID+".5")
		if err != nil || child.Status != store.RunCompleted || string(child.Result) != "42" || child.Parent != r.ID {
			t.Fatalf("%s: child run %+v %v", evict, child, err)
		}
	}
}

// The ops workflow replays exactly from every crash point under seeded
// schedules, with ids and result that never depend on timing.
func TestRustOpsCheck(t *testing.T) {
	echo := func(_ context.Context, in []byte) ([]byte, error) { return in, nil }
	rep := skeintest.Check(t, guestbuild.Rust(t, probe), "ops", `{"x":1}`, skeintest.Options{Schedules: 50,
		ScheduleIndependent: true, LeavePromises: true, Activities: map[string]activity.Func{"echo": echo}})
	if len(rep.Ends) != 1 {
		t.Fatalf("ends %+v", rep.Ends)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(rep.Ends[0].Result), &got); err != nil || !maps(got, opsWant(`{"x":1}`)) {
		t.Fatalf("checked result %s (%v)", rep.Ends[0].Result, err)
	}
}

// A promise settled from outside by its full id; and a cancellation that
// fails the pending promise with Error::Canceled, after which the workflow
// compensates and the run ends canceled.
func TestRustPromiseAndCancel(t *testing.T) {
	wasm := guestbuild.Rust(t, probe)
	ctx := context.Background()
	for _, evict := range hosttest.Evicts {
		e := hosttest.NewModule(t, wasm, "probe", evict)
		r := e.DriveNoWait(e.Start("approval", "null").ID)
		if r.Status != store.RunSuspended {
			t.Fatalf("%s: %s %s, want suspended on the promise", evict, r.Status, r.Error)
		}
		if err := e.Host.Resolve(ctx, r.ID+".approval", json.RawMessage(`"yes"`), ""); err != nil {
			t.Fatal(err)
		}
		if r = e.DriveNoWait(r.ID); r.Status != store.RunCompleted || string(r.Result) != `"yes"` {
			t.Fatalf("%s: resolved: %s %s %s", evict, r.Status, r.Result, r.Error)
		}
		e.Verify(r)

		r = e.DriveNoWait(e.Start("approval", "null").ID)
		if _, err := e.Host.Cancel(ctx, r.ID, "no longer needed"); err != nil {
			t.Fatal(err)
		}
		r = e.DriveNoWait(r.ID)
		if r.Status != store.RunCanceled || string(r.Result) != `"compensated (no longer needed, err true)"` {
			t.Fatalf("%s: canceled: %s %s %s", evict, r.Status, r.Result, r.Error)
		}
		e.Verify(r)
	}
}

// The timeout option bounds a step attempt: a body that runs past it
// fails the step with the host's timeout error.
func TestRustStepTimeout(t *testing.T) {
	r, outs, _ := hosttest.RunModule(t, guestbuild.Rust(t, probe), "timeout", "null", host.EvictNever)
	if r.Status != store.RunCompleted || !strings.HasPrefix(string(r.Result), `"step timed out: its body ran`) {
		t.Fatalf("%s %s %s", r.Status, r.Result, r.Error)
	}
	if o := hosttest.Outcome(t, outs, "1"); o.Function != "slow" || !strings.HasPrefix(o.Error, "step timed out") {
		t.Fatalf("recorded %+v", o)
	}
}

// A panic in the root task fails the run with its text; a result that is
// not JSON fails it with a clear error instead of storing it.
func TestRustFailures(t *testing.T) {
	wasm := guestbuild.Rust(t, probe)
	for wf, want := range map[string]string{
		"panics":  "panic: panicked at 'boom in the root task'",
		"notjson": "skein: value is not valid JSON: not json",
	} {
		e := hosttest.NewModule(t, wasm, "probe", host.EvictNever)
		r := e.Drive(e.Start(wf, "null").ID)
		if r.Status != store.RunFailed || !strings.HasPrefix(r.Error, want) {
			t.Fatalf("%s: %s %q, want failed with %q", wf, r.Status, r.Error, want)
		}
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A replay of the Rust SDK takes its steps from feeds of recorded
// outcomes (abi/README.md §5, feed): the verifying replay of 40 steps
// reaches the same sum with at least 35 of them fed, as the host's
// skein_fed_ops_total counts.
func TestRustFeed(t *testing.T) {
	e := hosttest.NewModule(t, guestbuild.Rust(t, probe), "probe", host.EvictNever)
	r := e.Drive(e.Start("steps", "40").ID)
	if string(r.Result) != "820" {
		t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
	}
	before := fedOps(t, e.Host)
	e.Verify(r)
	if fed := fedOps(t, e.Host) - before; fed < 35 {
		t.Errorf("the replay took %d of 40 steps from feeds; want at least 35", fed)
	}
}

// fedOps reads skein_fed_ops_total from the host's metrics.
func fedOps(t *testing.T, h *host.Host) int {
	var b strings.Builder
	if err := h.WriteMetrics(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, `skein_fed_ops_total{namespace="default"} `); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no skein_fed_ops_total in the metrics")
	return 0
}

// A run that ends while a task's step body is still running (the task
// lost a select) passes the check, as in the Go SDK; a step that only a
// replay issues (a body set workflow state) still fails it.
func TestRustInFlightAtEnd(t *testing.T) {
	wasmPath := guestbuild.Rust(t, probe)
	rep := skeintest.Check(t, wasmPath, "lost", `null`, skeintest.Options{Schedules: 20})
	if len(rep.Ends) != 1 || rep.Ends[0].Result != "0" {
		t.Fatalf("ends %+v; want the timer's index, 0", rep.Ends)
	}
	wasm, err := os.ReadFile(wasmPath)
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

// StepCtx::attempt is the durable attempt number: a step that fails on
// attempts 1 and 2 succeeds on 3, in every eviction mode, and the checker
// finds it the same from every crash point of every schedule.
func TestRustStepAttempt(t *testing.T) {
	wasm := guestbuild.Rust(t, probe)
	want := map[string]string{"flaky": "true", "plain": "1"}
	for _, evict := range hosttest.Evicts {
		r, outs, _ := hosttest.RunModule(t, wasm, "attempts", "null", evict)
		if got := result(t, r); !maps(got, want) {
			t.Fatalf("%s: got %q, want %q", evict, got, want)
		}
		if o := hosttest.Outcome(t, outs, "1"); o.Function != "flaky" || o.Attempts != 3 || o.Status != store.OutcomeOK {
			t.Fatalf("%s: the retried step: %+v", evict, o)
		}
	}
	rep := skeintest.Check(t, wasm, "attempts", "null", skeintest.Options{Schedules: 20, ScheduleIndependent: true})
	if len(rep.Ends) != 1 || rep.Ends[0].Result != `{"flaky":"true","plain":"1"}` {
		t.Fatalf("checked ends %+v", rep.Ends)
	}
}

// Opts::parent_close: the run ends while its child waits on a promise;
// by default the child is canceled (it compensates and ends canceled),
// with ParentClose::Abandon it is left waiting, marked abandoned.
func TestRustParentClose(t *testing.T) {
	wasm := guestbuild.Rust(t, probe)
	ctx := context.Background()
	for _, c := range []struct{ in, status string }{{`"cancel"`, "canceled"}, {`"abandon"`, "suspended"}} {
		e := hosttest.NewModule(t, wasm, "probe", host.EvictNever)
		r := e.Drive(e.Start("leaves", c.in).ID)
		if r.Status != store.RunCompleted || string(r.Result) != `"the timer won"` {
			t.Fatalf("%s: parent %s %s %s", c.in, r.Status, r.Result, r.Error)
		}
		// The child's drive goes on after the parent's returns (an
		// abandoned child runs on to its suspension): wait, bounded, for
		// it to leave running.
		child, err := e.Store.Run(ctx, r.ID+".1")
		for deadline := time.Now().Add(10 * time.Second); err == nil && child.Status == store.RunRunning && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			child, err = e.Store.Run(ctx, r.ID+".1")
		}
		if err != nil || string(child.Status) != c.status || child.Abandoned != (c.status == "suspended") {
			t.Fatalf("%s: child %s %q abandoned %v (%v); want %s", c.in, child.Status, child.Error, child.Abandoned, err, c.status)
		}
		if c.status == "canceled" && string(child.Result) != `"compensated (parent run `+r.ID+` ended (completed), err true)"` {
			t.Fatalf("%s: child result %s", c.in, child.Result)
		}
	}
}

// ctx.set_attributes records typed search attributes, as the Go SDK's
// skein.SetAttributes: a later value replaces an earlier one, an
// undeclared name or a wrong type fails the op (the workflow gets the
// error), and a replay at every idle point writes nothing again.
func TestRustSetAttributes(t *testing.T) {
	e := hosttest.NewModule(t, guestbuild.Rust(t, probe), "probe", host.EvictAlways)
	ctx := t.Context()
	for name, typ := range map[string]store.AttrType{"customer": store.AttrInt, "region": store.AttrString,
		"score": store.AttrFloat, "vip": store.AttrBool, "seen": store.AttrTime} {
		if _, err := e.Host.CreateAttribute(ctx, name, typ); err != nil {
			t.Fatal(err)
		}
	}
	r, n := e.DriveCount(e.Start("attrs", "null").ID)
	got := result(t, r)
	if !strings.Contains(got["undeclared"], `search attribute "nope" is not declared`) ||
		!strings.Contains(got["wrong"], `search attribute "customer" is a int: got the string "x"`) {
		t.Errorf("op errors %q", got)
	}
	if n < 2 {
		t.Errorf("%d executions: no replay", n)
	}
	m, err := e.Host.RunAttributes(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	a := m[r.ID]
	if a["customer"] != int64(42) || a["region"] != "us" || a["score"] != 2.0 || a["vip"] != true ||
		!a["seen"].(time.Time).Equal(time.Unix(0, 1_700_000_000_123_456_789)) || len(a) != 5 {
		t.Errorf("attributes %v", a)
	}
	outs := e.Verify(r)
	kinds := 0
	for _, o := range outs {
		if o.Kind == "attrs" {
			kinds++
		}
	}
	if kinds != 4 {
		t.Errorf("%d attrs ops recorded, want 4", kinds)
	}
}
