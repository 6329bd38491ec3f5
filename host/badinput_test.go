package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmtest"
	"github.com/skeinrun/skein/store"
)

// trapModule says hello, announces workflow "w", reads its invocation
// and then executes unreachable.
func trapModule() []byte { return wasmtest.TrapModule(1) }

func TestBadModules(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"text", []byte("hello, this is not wasm"), "not a WebAssembly module"},
		{"truncated", func() []byte { b := trapModule(); return b[:len(b)-3] }(), "invalid WebAssembly"},
		{"plain wasm", []byte("\x00asm\x01\x00\x00\x00"), "not a skein module"},
	} {
		_, err := h.Deploy(ctx, tc.name, tc.wasm)
		var me *ModuleError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a ModuleError containing %q", tc.name, err, tc.want)
		}
	}
}

// A guest trap fails the run with the trap in its error; the host and a
// concurrent well-behaved run are unaffected.
func TestTrapFailsRun(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	ctx := context.Background()
	m, err := h.Deploy(ctx, "trap", trapModule())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Workflows) != 1 || m.Workflows[0] != "w" {
		t.Fatalf("workflows %v", m.Workflows)
	}
	seq := h.deploy(t, "./examples/sequence")
	done := make(chan store.Run)
	go func() {
		r, _ := h.Start(ctx, StartOptions{Module: seq.Hash, Workflow: "sequence", Input: []byte(`{"n":50}`), ID: "good"})
		r, _ = h.Drive(ctx, r.ID, DriveOptions{})
		done <- r
	}()
	r := h.runToEnd(t, m, "w", "null", "trap")
	if r.Status != store.RunFailed || !strings.Contains(r.Error, "unreachable") {
		t.Fatalf("trap run: %s %q", r.Status, r.Error)
	}
	if g := <-done; g.Status != store.RunCompleted || string(g.Result) != "1275" {
		t.Fatalf("concurrent run: %s %s %s", g.Status, g.Result, g.Error)
	}
}

// Failures inside workflow code: each fails its run with a clear error in
// the run record.
func TestWorkflowFaults(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	m := h.deploy(t, "./testdata/workflows/probe")
	seq := h.deploy(t, "./examples/sequence")
	for _, tc := range []struct {
		mod      store.Module
		workflow string
		input    string
		want     string
	}{
		{m, "panics", "null", "assignment to entry in nil map"},
		{m, "fails", "null", "the workflow said no"},
		{m, "exits", "null", "exited with code 7"},
		{m, "rawgo", "null", "start concurrent work with skein.Go"},
		{m, "deadlock", "null", "awaits its own completion"},
	} {
		r := h.runToEnd(t, tc.mod, tc.workflow, tc.input, "fault-"+tc.workflow)
		if r.Status != store.RunFailed || !strings.Contains(r.Error, tc.want) {
			t.Errorf("%s: %s %q, want failed with %q", tc.workflow, r.Status, r.Error, tc.want)
		}
		stored, err := h.st.Run(context.Background(), r.ID)
		if err != nil || stored.Status != store.RunFailed || stored.Error != r.Error {
			t.Errorf("%s: stored run %s %q %v", tc.workflow, stored.Status, stored.Error, err)
		}
	}
	// The panic's record carries the stack of the workflow code.
	r, _ := h.st.Run(context.Background(), "fault-panics")
	if !strings.Contains(r.Error, "main.panics") {
		t.Errorf("panic error has no stack: %q", r.Error)
	}
	if _, err := h.Start(context.Background(), StartOptions{Module: m.Hash, Workflow: "nope"}); err == nil ||
		!strings.Contains(err.Error(), "interleave") || !strings.Contains(err.Error(), "sandbox") {
		t.Errorf("unknown workflow: %v, want the registered names listed", err)
	}
	if _, err := h.Start(context.Background(), StartOptions{Module: m.Hash, Workflow: "fails", Input: []byte("{")}); err == nil ||
		!strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("bad JSON input: %v", err)
	}
	// An input of the wrong shape starts no run (typed_test.go has more).
	if _, err := h.Start(context.Background(), StartOptions{Module: seq.Hash, Workflow: "sequence", Input: []byte(`{"n":"x"}`)}); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), `at $.n: want integer or null, got string "x"`) {
		t.Errorf("input of the wrong shape: %v", err)
	}
	// Nor one that the guest's decode would refuse: it does not fit an int.
	if _, err := h.Start(context.Background(), StartOptions{Module: seq.Hash, Workflow: "sequence", Input: []byte(`{"n":99999999999999999999}`)}); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), `at $.n: want integer in int64 range [-9223372036854775808, 9223372036854775807], got integer 99999999999999999999`) {
		t.Errorf("input out of an int's range: %v", err)
	}
}
