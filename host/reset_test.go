package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

const resetModule = "./testdata/workflows/reset"

// resetCase runs workflow of the reset module to its end as run id,
// resets it to key, drives the new run, and checks the keys the new run
// kept, the step bodies it ran again, and its result.
type resetCase struct {
	workflow, key string
	kept, ran     []string // keys, sorted
	result        string
}

func (c resetCase) check(t *testing.T, h *testHost, m store.Module) store.Run {
	t.Helper()
	ctx := context.Background()
	id := c.workflow + "-" + strings.ReplaceAll(c.key, ".", "_")
	orig := h.runToEnd(t, m, c.workflow, `{"tag":"x"}`, id)
	if orig.Status != store.RunCompleted {
		t.Fatalf("run %s: %s %s", id, orig.Status, orig.Error)
	}
	next, err := h.Reset(ctx, ResetOptions{RunID: id, ToKey: c.key})
	if err != nil {
		t.Fatalf("reset %s to %s: %v", id, c.key, err)
	}
	if next.ID != id+"~reset-1" || next.ResetFrom != id || next.ResetKey != c.key || next.Status != store.RunPending {
		t.Errorf("new run = %s from %q at %q, %s; want %s~reset-1 from %s at %s, pending", next.ID, next.ResetFrom, next.ResetKey, next.Status, id, id, c.key)
	}
	if got := keysOf(h.outcomes(t, next.ID)); !slices.Equal(got, c.kept) {
		t.Errorf("reset %s to %s kept %v, want %v", id, c.key, got, c.kept)
	}
	if o, err := h.st.Run(ctx, id); err != nil || o.Status != store.RunReset || o.ResetTo != next.ID || string(o.Result) != string(orig.Result) {
		t.Errorf("run reset = %+v, %v; want reset to %s, its result kept", o, err, next.ID)
	}
	end, err := h.Drive(ctx, next.ID, DriveOptions{WaitTimers: true})
	if err != nil || end.Status != store.RunCompleted || string(end.Result) != c.result {
		t.Fatalf("new run %s: %s %s %v; want completed %s", next.ID, end.Status, end.Result, err, c.result)
	}
	ran := keysOfCounts(h.c.bodiesOf(next.ID))
	if !slices.Equal(ran, c.ran) {
		t.Errorf("new run ran the bodies of %v, want %v", ran, c.ran)
	}
	// The new run replays exactly from its whole journal.
	if rep, err := h.Replay(ctx, next.ID); err != nil || rep.Status != store.RunCompleted || string(rep.Result) != c.result {
		t.Errorf("replay of %s: %+v, %v", next.ID, rep, err)
	}
	return end
}

func keysOfCounts(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// A reset to a key in the middle of each shape of journal keeps exactly
// the records that settled before it and do not follow it in its task,
// and the new run executes the rest again: sequential steps; a spawned
// task (the root's op after the spawn settled first and is kept, or is
// cut with the task when the reset is to it); a fan-out (the branches
// that settled before the reset op's branch are kept, the later one
// runs again); a child op (reset to it starts a new child run; reset
// after it keeps its outcome and starts none); a select whose losing
// timer was pending (re-issued, the recorded winner wins again).
func TestResetShapes(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	m := h.deploy(t, resetModule)
	for _, c := range []resetCase{
		{"seq", "3", []string{"1", "2"}, []string{"3", "4"}, `["a@x","b@x","c@x","d@x"]`},
		{"spawn", "t2.1", []string{"1", "3"}, []string{"4", "t2.1", "t2.2"}, `["r1@x","r3@x","x1@x","x2@x","r4@x"]`},
		{"spawn", "3", []string{"1"}, []string{"3", "4", "t2.1", "t2.2"}, `["r1@x","r3@x","x1@x","x2@x","r4@x"]`},
		{"fanout", "2.1.1", []string{"1", "2.0.1", "2.0.2"}, []string{"2.1.1", "2.1.2", "2.2.1", "2.2.2", "3"},
			`["p0@x","s1@x","s2@x","s1@x","s2@x","s1@x","s2@x","end@x"]`},
		{"fanout", "2.0.2", []string{"1", "2.0.1"}, []string{"2.0.2", "2.1.1", "2.1.2", "2.2.1", "2.2.2", "3"},
			`["p0@x","s1@x","s2@x","s1@x","s2@x","s1@x","s2@x","end@x"]`},
		{"parent", "2", []string{"1"}, []string{"3"}, `["c1@x","l1@x","c3@x"]`},
		{"parent", "3", []string{"1", "2"}, []string{"3"}, `["c1@x","l1@x","c3@x"]`},
		{"race", "3", []string{"t2.1"}, []string{"3"}, `["fast@x","after@x"]`},
		{"race", "t2.1", nil, []string{"3", "t2.1"}, `["fast@x","after@x"]`},
	} {
		t.Run(c.workflow+"-"+c.key, func(t *testing.T) {
			c.check(t, h, m)
		})
	}
	ctx := context.Background()
	// The child run of a reset to the child op is a new one; a reset after
	// it starts none.
	if _, err := h.st.Run(ctx, ChildRunID("parent-2~reset-1", "2")); err != nil {
		t.Errorf("reset to the child op: no new child run: %v", err)
	}
	if _, err := h.st.Run(ctx, ChildRunID("parent-3~reset-1", "2")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reset after the child op started a child run: %v", err)
	}
}

// A reset onto changed code with a new input: the kept records answer
// their ops as recorded (their input was the old one), the ops from the
// reset key on execute the new code with the new input; the new id is
// the one given.
func TestResetNewModuleAndInput(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	m := h.deploy(t, resetModule)
	v2 := h.deploy(t, resetModule+"/v2")
	ctx := context.Background()
	h.runToEnd(t, m, "seq", `{"tag":"x"}`, "s")
	next, err := h.Reset(ctx, ResetOptions{RunID: "s", ToKey: "3", Module: v2.Hash, Input: json.RawMessage(`{"tag":"y"}`), NewID: "s-fixed"})
	if err != nil {
		t.Fatal(err)
	}
	if next.ID != "s-fixed" || next.ModuleHash != v2.Hash || string(next.Input) != `{"tag":"y"}` {
		t.Fatalf("new run = %s on %s with %s; want s-fixed on v2 with the new input", next.ID, next.ModuleHash, next.Input)
	}
	end, err := h.Drive(ctx, next.ID, DriveOptions{})
	if want := `["a@x","b@x","v2:c@y","v2:d@y"]`; err != nil || string(end.Result) != want {
		t.Fatalf("new run: %s %s %v, want %s", end.Status, end.Result, err, want)
	}
	if rep, err := h.Replay(ctx, next.ID); err != nil || rep.Status != store.RunCompleted {
		t.Errorf("replay of the new run: %+v, %v", rep, err)
	}
}

// A suspended run reset: the original is reset (its promise can no
// longer be settled, it is not due), the new run re-executes from the
// key and suspends on its own promise.
func TestResetSuspended(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	m := h.deploy(t, resetModule)
	ctx := context.Background()
	if r := h.runToEnd(t, m, "wait", `{"tag":"x"}`, "w"); r.Status != store.RunSuspended {
		t.Fatalf("run w: %s, want suspended", r.Status)
	}
	next, err := h.Reset(ctx, ResetOptions{RunID: "w", ToKey: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Resolve(ctx, "w.2", json.RawMessage(`"late"`), ""); !errors.Is(err, ErrTerminal) {
		t.Errorf("settling the reset run's promise: %v, want ErrTerminal", err)
	}
	if r, err := h.Drive(ctx, next.ID, DriveOptions{}); err != nil || r.Status != store.RunSuspended {
		t.Fatalf("new run: %s, %v; want suspended", r.Status, err)
	}
	if err := h.Resolve(ctx, next.ID+".2", json.RawMessage(`"ok"`), ""); err != nil {
		t.Fatal(err)
	}
	if r, err := h.Drive(ctx, next.ID, DriveOptions{}); err != nil || string(r.Result) != `"ok"` {
		t.Fatalf("new run after its promise: %s %s %v", r.Status, r.Result, err)
	}
	if got := h.c.bodiesOf(next.ID); got["1"] != 1 {
		t.Errorf("new run's bodies = %v, want w1 run again", got)
	}
}

// A reset to an op that a later op of its task settled before (a timer
// the task waited for only after a step) cuts at that later op: it comes
// after the reset op in program order, so it executes again, and so does
// everything that settled after it. Positions tell the order; for named
// keys, the time each op was first issued does.
func TestResetLaterOpSettledFirst(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	m := h.deploy(t, resetModule)
	ctx := context.Background()
	for _, c := range []struct{ tag, timer, step, after string }{{"x", "1", "2", "3"}, {"named", "nap", "x", "y"}} {
		id := "async-" + c.tag
		h.runToEnd(t, m, "async", `{"tag":"`+c.tag+`"}`, id)
		outs := h.outcomes(t, id)
		if len(outs) != 3 || outs[0].Key != c.step || outs[1].Key != c.timer {
			t.Fatalf("journal of %s = %v, want %s settled first, then %s", id, keysOf(outs), c.step, c.timer)
		}
		next, err := h.Reset(ctx, ResetOptions{RunID: id, ToKey: c.timer})
		if err != nil {
			t.Fatal(err)
		}
		if got := h.outcomes(t, next.ID); len(got) != 0 {
			t.Errorf("reset of %s to its timer kept %v, want nothing (the step after it settled first)", id, keysOf(got))
		}
		// A reset to the step (first in settle order) keeps nothing; to the
		// step after the timer keeps both.
		next2, err := h.Reset(ctx, ResetOptions{RunID: next.ID, ToKey: c.step})
		if err == nil {
			t.Errorf("reset of %s, which has no journal yet, to %s: %s, want an error", next.ID, c.step, next2.ID)
		}
		if _, err := h.Drive(ctx, next.ID, DriveOptions{WaitTimers: true}); err != nil {
			t.Fatal(err)
		}
		n3, err := h.Reset(ctx, ResetOptions{RunID: next.ID, ToKey: c.after})
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(h.outcomes(t, n3.ID)); !slices.Equal(got, keysOf(outs[:2])) {
			t.Errorf("reset to %s kept %v, want %v", c.after, got, keysOf(outs[:2]))
		}
		if got := h.c.bodiesOf(next.ID); got[c.step] != 1 {
			t.Errorf("bodies of %s = %v, want the step run again", next.ID, got)
		}
	}
}

// A reset of a run that is executing: its drive stops and records
// nothing more (its step body's outcome is not committed), the run stays
// reset, its lease is released; the new run executes the step again.
func TestResetLive(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	m := h.deploy(t, resetModule)
	ctx := context.Background()
	r, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "slow", Input: json.RawMessage(`{"tag":"30s"}`), ID: "live"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := h.Drive(ctx, r.ID, DriveOptions{}); done <- err }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if outs := h.outcomes(t, "live"); len(outs) > 0 && outs[0].Key == "1" && outs[0].Status == store.OutcomeOK {
			break // committed at the idle point where the step body sleeps
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not commit its first step")
		}
	}
	next, err := h.Reset(ctx, ResetOptions{RunID: "live", ToKey: "1", Input: json.RawMessage(`{"tag":"1ms"}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("the drive of the run reset ended with %v, want a lost lease", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the drive of the run reset did not stop")
	}
	got, err := h.st.Run(ctx, "live")
	if err != nil || got.Status != store.RunReset || got.LeaseOwner != "" {
		t.Errorf("run reset: %s, lease %q, %v; want reset and released", got.Status, got.LeaseOwner, err)
	}
	if outs := h.outcomes(t, "live"); len(outs) != 1 {
		t.Errorf("the run reset recorded %v after its reset", keysOf(outs))
	}
	if end, err := h.Drive(ctx, next.ID, DriveOptions{}); err != nil || string(end.Result) != `"slept"` {
		t.Errorf("new run: %s %s %v", end.Status, end.Result, err)
	}
}

// Bad resets are refused with an error that names the input and the
// rule, and change nothing.
func TestResetBadInput(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	m := h.deploy(t, resetModule)
	ctx := context.Background()
	h.runToEnd(t, m, "seq", `{"tag":"x"}`, "b")
	h.runToEnd(t, m, "race", `{"tag":"x"}`, "r")
	h.runToEnd(t, m, "parent", `{"tag":"x"}`, "p")
	for _, c := range []struct {
		o    ResetOptions
		want string
		is   error
	}{
		{ResetOptions{RunID: "nope", ToKey: "1"}, "reset nope", ErrNotFound},
		{ResetOptions{RunID: "b", ToKey: "9"}, `key "9" is not in the run's journal`, ErrInvalid},
		{ResetOptions{RunID: "r", ToKey: "1"}, `the op at key "1" is pending`, ErrInvalid},
		{ResetOptions{RunID: ChildRunID("p", "2"), ToKey: "1"}, "is a child run of p", ErrInvalid},
		{ResetOptions{RunID: "b", ToKey: "2", Input: json.RawMessage(`{"tag":`)}, "input is not valid JSON", ErrInvalid},
		{ResetOptions{RunID: "b", ToKey: "2", Module: "nomodule"}, `module "nomodule"`, ErrNotFound},
		{ResetOptions{RunID: "b", ToKey: "2", NewID: "x/a/b"}, `--id: run id "a/b" has "/"`, ErrInvalid},
		{ResetOptions{RunID: "b", ToKey: "2", NewID: "acme/b2"}, "the new run must be in the reset run's namespace, default", ErrInvalid},
		{ResetOptions{RunID: "b", ToKey: "2", NewID: "r"}, "a run with this id exists", ErrConflict},
	} {
		_, err := h.Reset(ctx, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.is) {
			t.Errorf("Reset(%+v) = %v, want an error with %q (%v)", c.o, err, c.want, c.is)
		}
	}
	if r, _ := h.st.Run(ctx, "b"); r.Status != store.RunCompleted {
		t.Errorf("run b after refused resets: %s, want completed", r.Status)
	}
	if _, err := h.Reset(ctx, ResetOptions{RunID: "b", ToKey: "2"}); err != nil {
		t.Fatal(err)
	}
	_, err := h.Reset(ctx, ResetOptions{RunID: "b", ToKey: "2"})
	if err == nil || !strings.Contains(err.Error(), "only the newest run of a chain can be reset, reset b~reset-1 instead") || !errors.Is(err, ErrConflict) {
		t.Errorf("second reset of b: %v", err)
	}
	// A reset of the reset run's successor mints the next id.
	if n, err := h.Reset(ctx, ResetOptions{RunID: "b~reset-1", ToKey: "1"}); err != nil || n.ID != "b~reset-2" {
		t.Errorf("reset of b~reset-1: %s, %v; want b~reset-2", n.ID, err)
	}
}
