package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/guestbuild"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/store"
)

// The schemas examples/approval gives for its promise and its input.
const (
	approvalSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema",` +
		`"properties":{"approved":{"type":["boolean","null"]},"by":{"type":["string","null"]}},"type":["object","null"],"x-caseFold":true}`
	approvalInputSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema",` +
		`"properties":{"request":{"type":["string","null"]},"timeout":{"type":["string","null"]}},"type":["object","null"],"x-caseFold":true}`
)

// A promise's value of the wrong shape is refused with the expected shape
// in the message; the promise stays pending, the run is unaffected, and a
// value of the right shape then completes it.
func TestTypedPromiseRefusesWrongShape(t *testing.T) {
	for _, evict := range []host.Evict{host.EvictIdle, host.EvictAlways} {
		t.Run(string(evict), func(t *testing.T) {
			e := hosttest.New(t, "./examples/approval", evict)
			ctx := context.Background()
			r := e.DriveNoWait(e.Start("approval", `{"request":"r1"}`).ID)
			if r.Status != store.RunSuspended {
				t.Fatalf("status %s (%s), want suspended", r.Status, r.Error)
			}
			id := r.ID + ".decision"
			err := e.Host.Resolve(ctx, id, json.RawMessage(`{"approved":"yes","by":"ana"}`), "")
			se, ok := errors.AsType[*host.ShapeError](err)
			if !ok || !errors.Is(err, host.ErrInvalid) {
				t.Fatalf("resolve with a wrong shape: %v, want a *host.ShapeError (ErrInvalid)", err)
			}
			for _, want := range []string{
				`at $.approved: want boolean or null, got string "yes"`,
				`expected shape (JSON Schema): ` + approvalSchema,
				"the promise is still pending",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if se.Mismatch != `at $.approved: want boolean or null, got string "yes"` {
				t.Errorf("Mismatch = %q", se.Mismatch)
			}
			// Nothing was stored: no settlement, the promise is pending, the
			// run is as it was.
			sets, err := e.Store.Settlements(ctx, r.ID)
			if err != nil || len(sets) != 0 {
				t.Fatalf("settlements after the refused value: %+v %v", sets, err)
			}
			outs, err := e.Store.Outcomes(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if o := hosttest.Outcome(t, outs, "decision"); o.Status != store.OutcomePending || len(o.Schema) == 0 {
				t.Fatalf("decision after the refused value: %+v", o)
			}
			if got, err := e.Store.Run(ctx, r.ID); err != nil || got.Status != store.RunSuspended {
				t.Fatalf("run after the refused value: %s %v", got.Status, err)
			}
			// A nested wrong type, a key that differs in case (Go decodes it
			// into the field) and a key given twice are refused too.
			for _, bad := range []string{`[true]`, `{"approved":true,"by":7}`, `{"Approved":"no"}`, `{"by":7,"by":"ana"}`} {
				if err := e.Host.Resolve(ctx, id, json.RawMessage(bad), ""); !errors.Is(err, host.ErrInvalid) {
					t.Errorf("resolve %s: %v, want ErrInvalid", bad, err)
				}
			}
			// An error settlement is not a value: no shape to check. The right
			// shape completes the run.
			if err := e.Host.Resolve(ctx, id, json.RawMessage(`{"approved":true,"by":"ana"}`), ""); err != nil {
				t.Fatal(err)
			}
			r = e.DriveNoWait(r.ID)
			if r.Status != store.RunCompleted || string(r.Result) != `"ticket:r1 approved by ana"` {
				t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
			}
			e.Verify(r)
		})
	}
}

// A run's input of the wrong shape is refused before a run exists, with
// the expected shape in the message.
func TestTypedInputRefusedAtStart(t *testing.T) {
	e := hosttest.New(t, "./examples/approval", host.EvictIdle)
	ctx := context.Background()
	if got := string(e.Module.InputSchemas["approval"]); got != approvalInputSchema {
		t.Fatalf("the module's input schema for approval: %s", got)
	}
	_, err := e.Host.Start(ctx, host.StartOptions{Module: e.Module.Hash, Workflow: "approval", Input: json.RawMessage(`{"request":5}`), ID: "typed-1"})
	if _, ok := errors.AsType[*host.ShapeError](err); !ok || !errors.Is(err, host.ErrInvalid) {
		t.Fatalf("start with a wrong input: %v, want a *host.ShapeError (ErrInvalid)", err)
	}
	want := `start: the input of workflow "approval" does not have the expected shape: at $.request: want string or null, got integer 5; ` +
		`expected shape (JSON Schema): ` + approvalInputSchema
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant\n%s", err, want)
	}
	if _, err := e.Store.Run(ctx, "typed-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a run exists after the refused start: %v", err)
	}
	// No input (null) is the zero value, as before; a partial object too.
	for i, in := range []string{``, `null`, `{"request":"r1"}`} {
		id := []string{"typed-2", "typed-3", "typed-4"}[i]
		if _, err := e.Host.Start(ctx, host.StartOptions{Module: e.Module.Hash, Workflow: "approval", Input: json.RawMessage(in), ID: id}); err != nil {
			t.Fatalf("start with input %q: %v", in, err)
		}
	}
}

// A module whose guest gives no schemas (here a C guest written against
// the ABI without them) keeps working: its promises take any value.
func TestUntypedPromiseTakesAnyValue(t *testing.T) {
	e := hosttest.NewModule(t, guestbuild.C(t, "testdata/c/ops.c"), "ops", host.EvictIdle)
	e.Host.RegisterActivity("echo", echo)
	if e.Module.InputSchemas != nil {
		t.Fatalf("input schemas of a module that gives none: %v", e.Module.InputSchemas)
	}
	r := e.Drive(e.Start("ops", `{"x":1}`).ID)
	outs, err := e.Store.Outcomes(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o := hosttest.Outcome(t, outs, "approval"); o.Status != store.OutcomePending || o.Schema != nil {
		t.Fatalf("promise %+v", o)
	}
	if err := e.Host.Resolve(context.Background(), r.ID+".approval", json.RawMessage(`{"anything":[1,"x"]}`), ""); err != nil {
		t.Fatalf("resolve of an untyped promise: %v", err)
	}
}

// A module deployed before schemas said "$schema" keeps its stored input
// schemas, and they check as they did: null is accepted at the top, keys
// match exactly and the types are as written.
func TestTypedOldInputSchema(t *testing.T) {
	e := hosttest.New(t, "./examples/approval", host.EvictIdle)
	ctx := context.Background()
	old := e.Module
	old.Hash, old.Name = strings.Repeat("0", 64), "approval-old"
	old.InputSchemas = map[string]json.RawMessage{"approval": json.RawMessage(`{"properties":{"request":{"type":"string"},"timeout":{"type":"string"}},"type":"object"}`)}
	if err := e.Store.PutModule(ctx, old); err != nil {
		t.Fatal(err)
	}
	_, err := e.Host.Start(ctx, host.StartOptions{Module: "approval-old", Workflow: "approval", Input: json.RawMessage(`{"request":5}`), ID: "old-1"})
	if se, ok := errors.AsType[*host.ShapeError](err); !ok || se.Mismatch != `at $.request: want string, got integer 5` {
		t.Fatalf("start with a wrong input under the old schema: %v", err)
	}
	for i, in := range []string{`null`, `{"Request":5}`, `{"request":"r1"}`} {
		if _, err := e.Host.Start(ctx, host.StartOptions{Module: "approval-old", Workflow: "approval", Input: json.RawMessage(in), ID: "old-ok-" + strconv.Itoa(i)}); err != nil {
			t.Errorf("start with %s under the old schema: %v", in, err)
		}
	}
	if _, err := e.Host.Start(ctx, host.StartOptions{Module: "approval-old", Workflow: "approval", Input: json.RawMessage(`{"request":7,"request":"a"}`), ID: "old-2"}); !errors.Is(err, host.ErrInvalid) {
		t.Errorf("a key given twice, the first of the wrong type: %v, want refused (each occurrence is checked)", err)
	}
}

// A schedule's input is checked when the schedule is created, not at
// each firing, and a hook delivery's input before its run exists: both
// are refused as a run's input is.
func TestTypedScheduleAndHookInputs(t *testing.T) {
	e := hosttest.New(t, "./testdata/workflows/typed", host.EvictIdle)
	ctx := context.Background()
	_, err := e.Host.CreateSchedule(ctx, host.ScheduleOptions{Name: "big", Cron: "@daily", Module: "typed", Workflow: "inputCount",
		Input: json.RawMessage(`{"n":100000000000000000000}`)})
	if se, ok := errors.AsType[*host.ShapeError](err); !ok || !errors.Is(err, host.ErrInvalid) ||
		se.Mismatch != `at $.n: want integer in int64 range [-9223372036854775808, 9223372036854775807], got integer 100000000000000000000` {
		t.Fatalf("a schedule with an input out of range: %v", err)
	}
	if _, err := e.Host.Schedule(ctx, "big"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused schedule exists: %v", err)
	}
	if _, err := e.Host.CreateSchedule(ctx, host.ScheduleOptions{Name: "ok", Cron: "@daily", Module: "typed", Workflow: "inputCount",
		Input: json.RawMessage(`{"n":7}`)}); err != nil {
		t.Fatalf("a schedule with a good input: %v", err)
	}
	// A hook's run gets the request (host.HookInput): a workflow whose
	// input is an int cannot take it.
	if _, err := e.Host.CreateHook(ctx, host.HookOptions{Name: "h", Module: "typed", Workflow: "inputInt"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.Host.Deliver(ctx, "h", host.Delivery{Method: "POST", Path: "/hooks/h", Body: []byte("hi")})
	if se, ok := errors.AsType[*host.ShapeError](err); !ok || se.Mismatch != `at $: want integer or null, got object` {
		t.Fatalf("a delivery its workflow cannot decode: %v", err)
	}
	if runs, err := e.Store.Runs(ctx, store.RunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("runs after the refused delivery: %v %v", runs, err)
	}
}
