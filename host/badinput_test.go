package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinrun/skein/store"
)

// trapModule is a hand-assembled skein module: it says hello, announces
// workflow "w", reads its invocation and then executes unreachable.
func trapModule() []byte {
	sec := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	imp := func(name string, typ byte) []byte {
		b := append(str("skein"), str(name)...)
		return append(b, 0x00, typ)
	}
	var m []byte
	m = append(m, 0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00)
	m = append(m, sec(1, 4,
		0x60, 1, 0x7f, 1, 0x7f, // 0: (i32) -> i32
		0x60, 2, 0x7f, 0x7f, 0, // 1: (i32, i32) -> ()
		0x60, 2, 0x7f, 0x7f, 1, 0x7f, // 2: (i32, i32) -> i32
		0x60, 0, 0, // 3: () -> ()
	)...)
	imports := []byte{3}
	imports = append(imports, imp("hello", 0)...)
	imports = append(imports, imp("workflows", 1)...)
	imports = append(imports, imp("invocation", 2)...)
	m = append(m, sec(2, imports...)...)
	m = append(m, sec(3, 1, 3)...)    // one function of type 3
	m = append(m, sec(5, 1, 0, 1)...) // one memory, 1 page
	exports := []byte{2}
	exports = append(exports, str("_start")...)
	exports = append(exports, 0x00, 3)
	exports = append(exports, str("memory")...)
	exports = append(exports, 0x02, 0)
	m = append(m, sec(7, exports...)...)
	body := []byte{0x00, // no locals
		0x41, 1, 0x10, 0, 0x1a, // hello(1); drop
		0x41, 0, 0x41, 1, 0x10, 1, // workflows(0, 1)
		0x41, 0, 0x41, 0, 0x10, 2, 0x1a, // invocation(0, 0); drop
		0x00, 0x0b} // unreachable; end
	m = append(m, sec(10, append([]byte{1, byte(len(body))}, body...)...)...)
	m = append(m, sec(11, 1, 0, 0x41, 0, 0x0b, 1, 'w')...) // "w" at offset 0
	return m
}

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
		{seq, "sequence", `{"n":"x"}`, "does not decode into"},
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
}
