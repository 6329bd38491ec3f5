package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestSnapshotWasmGo: a Go reactor rewritten from its state after
// _initialize (run on wazero in the world of initWorld) starts, without
// running anything, with that state: the same memory byte for byte and
// the same globals. Its data is a few merged segments.
func TestSnapshotWasmGo(t *testing.T) {
	wasm, err := os.ReadFile(wasmbuild.BuildReactor(t, "./testdata/workflows/bench"))
	if err != nil {
		t.Fatal(err)
	}
	rt := snapshotRuntime(t, wasm)
	globals, mem, exported := initialState(t, rt, wasm, ReactorInit)
	rewritten, err := snapshotWasm(wasm, globals, mem)
	if err != nil {
		t.Fatal(err)
	}
	_, gotMem, gotGlobals := initialState(t, rt, rewritten, "")
	if !bytes.Equal(gotMem, mem) {
		t.Fatalf("rewritten module starts with %d bytes of memory, not the snapshot's %d (or other bytes)", len(gotMem), len(mem))
	}
	if fmt.Sprint(gotGlobals) != fmt.Sprint(exported) {
		t.Fatalf("rewritten module's globals %v; want the snapshot's %v", gotGlobals, exported)
	}
	orig, _ := parseDataOf(t, wasm)
	n, _ := parseDataOf(t, rewritten)
	t.Logf("%d data segments -> %d; memory %d KiB; module %d -> %d bytes", orig, n, len(mem)>>10, len(wasm), len(rewritten))
	if n > 200 {
		t.Errorf("%d data segments: the gaps of zeros were not merged", n)
	}
}

// TestSnapshotWasmShapes: the rewrite of a hand-built module with an
// imported global (the defined ones are numbered after it), mutable i32
// and i64 globals, an immutable global initialised from the import, a
// memory that _initialize grows and a start function (dropped: its
// effect is in the snapshot).
func TestSnapshotWasmShapes(t *testing.T) {
	code := []byte{0}                                                       // no locals
	code = append(code, 0x41, 0x01, 0x40, 0x00, 0x1a)                       // memory.grow 1; drop
	code = appendSLEB128(append(code, 0x41), 70000)                         // i32.const 70000
	code = appendSLEB128(append(code, 0x41), 0x12345678)                    // i32.const
	code = append(code, 0x36, 0x02, 0x00)                                   // i32.store
	code = appendSLEB128(append(code, 0x41), -7)                            // i32.const -7
	code = append(code, 0x24, 0x01)                                         // global.set 1
	code = appendSLEB128(append(code, 0x42), -1234567890123)                // i64.const
	code = append(code, 0x24, 0x02, 0x0b)                                   // global.set 2; end
	start := []byte{0, 0x41, 0x0a, 0x41, 0x07, 0x3a, 0x00, 0x00, 0x0b}      // (i32.store8 (i32.const 10) (i32.const 7))
	hello := append([]byte{1, 0x00, 0x41, 0xe4, 0x00, 0x0b, 5}, "hello"...) // "hello" at 100
	exports := []byte{2, 11}                                                // two exports
	exports = append(append(exports, ReactorInit...), 0x00, 0x00)           // _initialize: func 0
	exports = append(append(exports, 6), "memory"...)                       // memory: memory 0
	exports = append(exports, 0x02, 0x00)                                   //
	wasm := wasmModule(
		wasmSection{1, []byte{1, 0x60, 0, 0}},                                   // type: () -> ()
		wasmSection{2, append(append([]byte{1, 3}, "env\x01g"...), 3, 0x7f, 0)}, // import env.g: immutable i32
		wasmSection{3, []byte{2, 0, 0}},                                         // two functions
		wasmSection{5, []byte{1, 1, 1, 4}},                                      // memory: 1 to 4 pages
		wasmSection{6, []byte{3, 0x7f, 1, 0x41, 5, 0x0b, 0x7e, 1, 0x42, 0, 0x0b, 0x7f, 0, 0x23, 0, 0x0b}},
		wasmSection{7, exports},
		wasmSection{8, []byte{1}}, // start: func 1
		wasmSection{10, append(append(append([]byte{2}, byte(len(code))), code...), append([]byte{byte(len(start))}, start...)...)},
		wasmSection{11, hello},
	)
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { rt.Close(ctx) })
	env := wasmModule(wasmSection{6, []byte{1, 0x7f, 0, 0x41, 42, 0x0b}}, wasmSection{7, append([]byte{1, 1}, "g\x03\x00"...)})
	if _, err := rt.InstantiateWithConfig(ctx, env, wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	globals, mem, exported := initialState(t, rt, wasm, ReactorInit)
	if len(mem) != 2*65536 || mem[10] != 7 || string(mem[100:105]) != "hello" || binary.LittleEndian.Uint32(mem[70000:]) != 0x12345678 {
		t.Fatalf("the module did not run as written: %d bytes of memory", len(mem))
	}
	rewritten, err := snapshotWasm(wasm, globals, mem)
	if err != nil {
		t.Fatal(err)
	}
	sections, err := sectionsOf(rewritten)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sections {
		if s.id == 8 {
			t.Error("the rewritten module keeps its start function")
		}
	}
	_, gotMem, gotGlobals := initialState(t, rt, rewritten, "")
	if !bytes.Equal(gotMem, mem) {
		t.Errorf("rewritten module starts with %d bytes of memory, not the snapshot's", len(gotMem))
	}
	want := "map[skein:global:1:4294967289 skein:global:2:18446742839141661493 skein:global:3:42]"
	if fmt.Sprint(exported) != want || fmt.Sprint(gotGlobals) != want {
		t.Errorf("globals %v after _initialize, %v in the rewritten module; want %s", exported, gotGlobals, want)
	}
	if !activeDataOK(rewritten) {
		t.Error("the rewritten data section does not parse as active segments")
	}
	// A module of a form the rewrite does not handle is refused, not
	// rewritten wrongly.
	for name, s := range map[string]wasmSection{
		"data count":   {12, []byte{1}},
		"two memories": {5, []byte{2, 0, 1, 0, 1}},
	} {
		bad := wasmModule(append(slicesWithout(sections, s.id), s)...)
		if _, err := snapshotWasm(bad, globals, mem); err == nil {
			t.Errorf("%s: rewritten; want an error", name)
		}
	}
}

// activeData's ok, for the test.
func activeDataOK(wasm []byte) bool { _, _, _, ok, _ := activeData(wasm); return ok }

func slicesWithout(sections []wasmSection, id byte) []wasmSection {
	var out []wasmSection
	for _, s := range sections {
		if s.id != id {
			out = append(out, s)
		}
	}
	return out
}

// wasmModule assembles a module from its sections.
func wasmModule(sections ...wasmSection) []byte {
	return assemble([]byte("\x00asm\x01\x00\x00\x00"), sections, -1, nil)
}

// snapshotRuntime is a wazero runtime (the interpreter: it compiles
// fast) with WASI and stubs of the other functions wasm imports.
func snapshotRuntime(t *testing.T, wasm []byte) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { rt.Close(ctx) })
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		t.Fatal(err)
	}
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]wazero.HostModuleBuilder{}
	for _, f := range cm.ImportedFunctions() {
		m, name, _ := f.Import()
		if m == wasi_snapshot_preview1.ModuleName {
			continue
		}
		if hosts[m] == nil {
			hosts[m] = rt.NewHostModuleBuilder(m)
		}
		hosts[m].NewFunctionBuilder().WithGoModuleFunction(noop{}, f.ParamTypes(), f.ResultTypes()).Export(name)
	}
	for _, b := range hosts {
		if _, err := b.Instantiate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return rt
}

// initialState instantiates wasm (with exports for its globals) in the
// world of initWorld, running start (if not ""), and returns the values
// of its mutable globals by index, its memory, and all its globals by
// export name.
func initialState(t *testing.T, rt wazero.Runtime, wasm []byte, start string) (map[uint32]uint64, []byte, map[string]uint64) {
	t.Helper()
	ctx := context.Background()
	sections, err := sectionsOf(wasm)
	if err != nil {
		t.Fatal(err)
	}
	s, err := shapeOf(sections)
	if err != nil {
		t.Fatal(err)
	}
	cfg := moduleConfig(initWorld(io.Discard)).WithStartFunctions()
	if start != "" {
		cfg = cfg.WithStartFunctions(start)
	}
	mod, err := rt.InstantiateWithConfig(ctx, assemble(wasm, exportGlobals(sections, s), -1, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	globals, all := map[uint32]uint64{}, map[string]uint64{}
	for g := s.first; g < s.first+s.globals; g++ {
		name := fmt.Sprintf("%s%d", globalExportPrefix, g)
		gl := mod.ExportedGlobal(name)
		all[name] = gl.Get()
		if _, ok := gl.(api.MutableGlobal); ok {
			globals[uint32(g)] = gl.Get()
		}
	}
	mem, _ := mod.Memory().Read(0, mod.Memory().Size())
	return globals, bytes.Clone(mem), all
}
