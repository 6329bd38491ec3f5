package modules

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/wasmlimits"
	"github.com/skeinrun/skein/internal/testing/wasmtest"
)

// testEngine is the engine of SKEIN_TEST_ENGINE (make test-wasmtime).
var testEngine = os.Getenv("SKEIN_TEST_ENGINE")

// newTestSet is a set on a new engine of its own, with compile slots,
// interrupt checks or not, and the default structure limits.
func newTestSet(t *testing.T, slots int, interrupt bool) *Set {
	t.Helper()
	eng, err := engine.New(context.Background(), testEngine, engine.Config{HostModule: "skein", Interruptible: interrupt, MemoryLimitPages: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	return New(Config{Engine: eng, MaxConcurrentCompiles: slots, MaxCompiledBytes: -1,
		Structure: wasmlimits.Limits{Nesting: 4096, ControlOps: 8192, Functions: 100_000, FunctionBytes: 1 << 20, Locals: 512,
			Types: 1024, TypeValues: 128, Imports: 1024, Exports: 1024, Globals: 10_000, TableElements: 262_144,
			DataSegments: 1_000_000, ElementSegments: 10_000, MemoryPages: 4096}})
}

// TestCompileContextEndedFirst: a compilation whose context ended before
// it began (under the race detector the structure check of a large module
// outlasts a short deadline) fails with the context's cause every time,
// not, at random, as if it had waited for a free compile slot.
func TestCompileContextEndedFirst(t *testing.T) {
	s := newTestSet(t, 2, true)
	wasm := wasmtest.Shaped(wasmtest.Shape{Workflow: "w", Functions: 1})
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the client left"))
	for range 20 {
		_, err := s.compileCode(ctx, "left", wasm, time.Second, engine.CompileOptions{})
		if err == nil || err.Error() != "compiling module left stopped: the client left" {
			t.Fatalf("compileCode with an ended context: %v", err)
		}
	}
}

// TestCompilerPanicIsAnError: a module that makes wazero panic (this one
// calls a function whose type index names no type: wazero 1.12 indexes
// its types with it unchecked) is an error, on the goroutine a
// compilation runs on, where a panic would end the process. Deploy
// never gets that far with it (the structure check refuses it), nor does
// a compilation with interrupts on wazero (the interrupt checks are added
// after the same walk of every instruction): so interrupts are off here.
func TestCompilerPanicIsAnError(t *testing.T) {
	wasm := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // one type () -> ()
		3, 3, 2, 0, 7, // two functions: type 0, type 7
		10, 9, 2, 4, 0, 0x10, 1, 0x0b, 2, 0, 0x0b} // function 0 calls function 1
	s := newTestSet(t, 1, false)
	_, err := s.compileCode(context.Background(), "bad", wasm, 0, engine.CompileOptions{})
	want := "module bad rejected: invalid WebAssembly: the compiler failed on it: runtime error: index out of range"
	if testEngine == engine.Wasmtime { // wasmtime has not this bug: its validator refuses the module
		want = "module bad rejected: invalid WebAssembly: failed to parse WebAssembly module: unknown type 7: type index out of bounds (at offset 0x12)"
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("compileCode: %v\nwant %s", err, want)
	}
	_, _, err = s.Compile(context.Background(), "bad", wasm, 0)
	if err == nil || err.Error() != "module bad rejected: invalid WebAssembly: malformed function section, function 1: at byte 19: type index 7, but the module declares 1 types" {
		t.Errorf("Compile: %v", err)
	}
}
