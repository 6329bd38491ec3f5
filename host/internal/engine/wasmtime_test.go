//go:build wasmtime

package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// wtTestEngine is a wasmtime engine whose host module "env" has tick
// (which fails when its argument is 7) and whose memory limit is 2 pages.
func wtTestEngine(t *testing.T, name string, interruptible bool) Engine {
	t.Helper()
	e, err := New(context.Background(), name, Config{HostModule: "env", MemoryLimitPages: 2, Interruptible: interruptible,
		HostFuncs: []HostFunc{{Name: "tick", Type: FuncType{Params: []ValueType{I32}, Results: []ValueType{I32}},
			Call: func(_ context.Context, mem Memory, stack []uint64) error {
				if stack[0] == 7 {
					return errors.New("tick 7 refused")
				}
				if stack[0] == 9 {
					panic("tick 9 panicked")
				}
				b, ok := mem.Read(0, 4)
				if !ok {
					return errors.New("no memory")
				}
				stack[0] = uint64(b[0]) + stack[0]
				return nil
			}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func wtCompile(t *testing.T, e Engine, wat string) Module {
	t.Helper()
	wasm, err := wasmtime.Wat2Wasm(wat)
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Compile(context.Background(), wasm, CompileOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func wtRunConfig() RunConfig {
	return RunConfig{Args: []string{"workflow"}, Stdout: io.Discard, Stderr: io.Discard,
		Walltime: func() (int64, int32) { return 0, 0 }, Nanotime: func() int64 { return 1 }, Nanosleep: func(int64) {},
		Rand: bytes.NewReader(make([]byte, 64))}
}

// TestWasmtimeInterrupt: the end of a run's context stops its guest
// (a loop without calls) at once, with wazero's error text, and only
// that guest: another one spinning on the same engine runs on until its
// own context ends.
func TestWasmtimeInterrupt(t *testing.T) {
	e := wtTestEngine(t, Wasmtime, true)
	m := wtCompile(t, e, `(module (import "env" "tick" (func (param i32) (result i32))) (memory (export "memory") 1)
		(func (export "_start") (loop br 0)))`)
	type result struct {
		err error
		d   time.Duration
	}
	run := func(after time.Duration, out chan<- result) {
		ctx, cancel := context.WithTimeout(context.Background(), after)
		defer cancel()
		start := time.Now()
		err := e.Run(ctx, m, wtRunConfig())
		out <- result{err, time.Since(start)}
	}
	short, long := make(chan result, 1), make(chan result, 1)
	go run(1500*time.Millisecond, long)
	go run(200*time.Millisecond, short)
	s, l := <-short, <-long
	want := "module closed with context deadline exceeded"
	if s.err == nil || s.err.Error() != want || !errors.Is(s.err, context.DeadlineExceeded) || s.d > time.Second {
		t.Errorf("short run: %v after %v; want %q after 200ms", s.err, s.d, want)
	}
	if l.err == nil || l.err.Error() != want || l.d < 1400*time.Millisecond {
		t.Errorf("long run: %v after %v; want %q after 1.5s (not stopped by the short run's interrupt)", l.err, l.d, want)
	}
}

// TestWasmtimeEnds: how a guest ends, the same on both engines: a host
// function's error, a trap (wazero's text), proc_exit, a memory.grow
// past the limit (it fails, -1), a memory over the limit (refused at
// compile), and an import the host does not provide (the import check).
func TestWasmtimeEnds(t *testing.T) {
	for _, name := range []string{Wazero, Wasmtime} {
		t.Run(name, func(t *testing.T) { testEnds(t, wtTestEngine(t, name, false)) })
	}
}

func testEnds(t *testing.T, e Engine) {
	ctx := context.Background()
	start := func(body string) string {
		return `(module (import "env" "tick" (func $tick (param i32) (result i32)))
			(import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
			(memory (export "memory") 1) (func (export "_start") ` + body + `))`
	}
	for _, c := range []struct{ name, body, want string }{
		{"host error", `(drop (call $tick (i32.const 7)))`, "tick 7 refused"},
		{"trap", `unreachable`, "module[] function[_start] failed: wasm error: unreachable\nwasm stack trace:\n\t.$2()"},
		{"divide", `(drop (i32.div_u (i32.const 1) (i32.const 0)))`, "module[] function[_start] failed: wasm error: integer divide by zero"},
		{"exit", `(call $exit (i32.const 3))`, "the module exited with code 3"},
		{"exit 0", `(call $exit (i32.const 0)) unreachable`, ""},
		{"grow", `(if (i32.ne (memory.grow (i32.const 2)) (i32.const -1)) (then unreachable))`, ""},
		{"ok", `(if (i32.ne (call $tick (i32.const 1)) (i32.const 1)) (then unreachable))`, ""},
	} {
		err := e.Run(ctx, wtCompile(t, e, start(c.body)), wtRunConfig())
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	// A panic in a host function fails the run on both engines; it
	// never crosses wasmtime's C frames.
	if err := e.Run(ctx, wtCompile(t, e, start(`(drop (call $tick (i32.const 9)))`)), wtRunConfig()); err == nil || !strings.Contains(err.Error(), "tick 9 panicked") {
		t.Errorf("panic: %v; want an error with the panic", err)
	}
	var ee *ExitError
	if err := e.Run(ctx, wtCompile(t, e, start(`(call $exit (i32.const 3))`)), wtRunConfig()); !errors.As(err, &ee) || ee.Code != 3 {
		t.Errorf("exit: %v; want an *ExitError with code 3", err)
	}
	for _, c := range []struct{ name, wat, want string }{
		{"memory", `(module (import "env" "tick" (func (param i32) (result i32))) (memory (export "memory") 3) (func (export "_start")))`,
			"section memory: min 3 pages (192 Ki) over limit of 2 pages (128 Ki)"},
		{"import", `(module (import "env" "tock" (func)) (func (export "_start")))`,
			"it imports env.tock, which skein ABI v"},
		{"socket", `(module (import "env" "tick" (func (param i32) (result i32))) (import "wasi_snapshot_preview1" "sock_open" (func)) (func (export "_start")))`,
			"it imports wasi_snapshot_preview1.sock_open, which skein does not provide"},
	} {
		wasm, err := wasmtime.Wat2Wasm(c.wat)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Compile(ctx, wasm, CompileOptions{Workers: 1}); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}

// TestWasmtimeDiskCache: with CacheDir, a compiled module is serialized
// to a folder of its code variant; a new engine loads it from there, and
// a damaged file is compiled again and replaced, not an error.
func TestWasmtimeDiskCache(t *testing.T) {
	dir := t.TempDir()
	wasm, err := wasmtime.Wat2Wasm(`(module (import "env" "tick" (func (param i32) (result i32))) (func (export "_start")))`)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func() {
		t.Helper()
		e, err := New(ctx, Wasmtime, Config{HostModule: "env", CacheDir: dir, MemoryLimitPages: 2, Interruptible: true,
			HostFuncs: []HostFunc{{Name: "tick", Type: FuncType{Params: []ValueType{I32}, Results: []ValueType{I32}},
				Call: func(context.Context, Memory, []uint64) error { return nil }}}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(ctx)
		m, err := e.Compile(ctx, wasm, CompileOptions{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(ctx, m, wtRunConfig()); err != nil {
			t.Fatal(err)
		}
		m.Close(ctx)
	}
	run()
	files, _ := filepath.Glob(filepath.Join(dir, "wasmtime-go-v39.0.1-epoch", "*.cwasm"))
	if len(files) != 1 {
		t.Fatalf("cache files %v; want one serialized module", files)
	}
	info, _ := os.Stat(files[0])
	time.Sleep(10 * time.Millisecond)
	run() // loads it: the file is not written again
	if again, err := os.Stat(files[0]); err != nil || !again.ModTime().Equal(info.ModTime()) {
		t.Errorf("a new engine compiled the module again instead of loading it: %v", err)
	}
	if err := os.WriteFile(files[0], []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	run() // compiles again
	if again, err := os.Stat(files[0]); err != nil || again.Size() != info.Size() {
		t.Errorf("the damaged cache file was not replaced: %v, %d bytes (was %d)", err, again.Size(), info.Size())
	}
}
