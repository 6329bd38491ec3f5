//go:build wasmtime

package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// snapReactor is a reactor whose _initialize reports 7, grows the memory, counts
// its runs in it, sets a global and keeps the monotonic clock it reads;
// skein_main traps unless _initialize ran exactly once in the state it
// starts from, writes over that count, and reports the clock _initialize
// read and the memory size.
const snapReactor = `(module
	(import "env" "report" (func $report (param i64)))
	(import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
	(memory (export "memory") 1 2)
	(data (i32.const 32) "skein") ;; wazero takes snapshots of modules with data (memory images)
	(global $g (mut i32) (i32.const 0))
	(global $t (mut i64) (i64.const 0))
	(func (export "_initialize")
		(call $report (i64.const 7))
		(drop (memory.grow (i32.const 1)))
		(i32.store8 (i32.const 70000) (i32.add (i32.load8_u (i32.const 70000)) (i32.const 1)))
		(global.set $g (i32.const 5))
		(drop (call $clock (i32.const 1) (i64.const 0) (i32.const 16)))
		(global.set $t (i64.load (i32.const 16))))
	(func (export "skein_main")
		(if (i32.ne (i32.load8_u (i32.const 70000)) (i32.const 1)) (then unreachable))
		(if (i32.ne (global.get $g) (i32.const 5)) (then unreachable))
		(i32.store8 (i32.const 70000) (i32.const 99))
		(call $report (global.get $t))
		(call $report (i64.extend_i32_u (memory.size)))))`

// snapEngine is an engine whose host module "env" has report, which
// appends its argument to reports.
func snapEngine(t *testing.T, name string, noSnap bool, reports *[]uint64) Engine {
	t.Helper()
	var mu sync.Mutex
	e, err := New(context.Background(), name, Config{HostModule: "env", MemoryLimitPages: 2, Interruptible: true,
		NoSnapshots: noSnap, InitTimeout: 300 * time.Millisecond,
		HostFuncs: []HostFunc{{Name: "report", Type: FuncType{Params: []ValueType{I64}},
			Call: func(_ context.Context, _ Memory, stack []uint64) error {
				mu.Lock()
				defer mu.Unlock()
				*reports = append(*reports, stack[0])
				return nil
			}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// TestWasmtimeSnapshot: on both engines a reactor's instances start from
// its snapshot: _initialize ran once, in the world of initWorld (its
// clock read 1 s), with its memory growth kept, and no instance sees
// another's writes; with NoSnapshots every instance runs _initialize at
// its own clock (1 ns in wtRunConfig).
func TestWasmtimeSnapshot(t *testing.T) {
	for _, name := range []string{Wazero, Wasmtime} {
		for _, noSnap := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nosnapshots=%v", name, noSnap), func(t *testing.T) {
				if name == Wazero && runtime.GOOS != "linux" && !noSnap {
					t.Skip("wazero takes snapshots on Linux only (memory images)")
				}
				var reports []uint64
				e := snapEngine(t, name, noSnap, &reports)
				m := wtCompile(t, e, snapReactor)
				if m.Snapshotted() == noSnap {
					t.Fatalf("Snapshotted() = %v", m.Snapshotted())
				}
				for range 2 {
					if err := e.Run(context.Background(), m, wtRunConfig()); err != nil {
						t.Fatal(err)
					}
				}
				clock := uint64(1e9)
				if noSnap {
					clock = 1
				}
				want := []uint64{7, clock, 2, clock, 2} // _initialize at Compile, then two runs
				if noSnap {
					want = []uint64{7, clock, 2, 7, clock, 2}
				}
				if !slices.Equal(reports, want) {
					t.Errorf("reports %v; want %v (7 per _initialize; its clock and the memory pages per run)", reports, want)
				}
			})
		}
	}
}

// TestWasmtimeSnapshotFails: a reactor whose _initialize traps, exits,
// calls a host function that fails, or does not finish in
// Config.InitTimeout is refused at Compile with the same error on both
// engines.
func TestWasmtimeSnapshotFails(t *testing.T) {
	for _, c := range []struct{ name, init, want string }{
		{"trap", `unreachable`, "its start-up (_initialize) failed: module[] function[_initialize] failed: wasm error: unreachable"},
		{"exit", `(call $exit (i32.const 3))`, "its start-up (_initialize) failed: module closed with exit_code(3)"},
		{"spin", `(loop br 0)`, "its start-up (_initialize) did not finish within 300ms"},
	} {
		wat := `(module (import "env" "report" (func (param i64)))
			(import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
			(memory (export "memory") 1) (data (i32.const 32) "skein")
			(func (export "_initialize") ` + c.init + `) (func (export "skein_main")))`
		wasm, err := wasmtime.Wat2Wasm(wat)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, name := range []string{Wazero, Wasmtime} {
			var reports []uint64
			_, err := snapEngine(t, name, false, &reports).Compile(context.Background(), wasm, CompileOptions{Workers: 1})
			var ie *InvalidError
			var te *InitTimeoutError
			if err == nil || !errors.As(err, &ie) && !errors.As(err, &te) {
				t.Fatalf("%s on %s: %v; want an *InvalidError or *InitTimeoutError", c.name, name, err)
			}
			texts = append(texts, err.Error())
		}
		if texts[0] != texts[1] || !strings.HasPrefix(texts[0], c.want) {
			t.Errorf("%s: wazero %q, wasmtime %q; want both %q...", c.name, texts[0], texts[1], c.want)
		}
	}
}

// TestWasmtimeSnapshotCache: with CacheDir, the snapshot's code is
// serialized; a new engine loads it and runs no _initialize (it reports
// nothing at Compile), and its instances start from the snapshot.
func TestWasmtimeSnapshotCache(t *testing.T) {
	dir := t.TempDir()
	wasm, err := wasmtime.Wat2Wasm(snapReactor)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, want := range [][]uint64{{7, 1e9, 2}, {1e9, 2}} {
		var reports []uint64
		var mu sync.Mutex
		e, err := New(ctx, Wasmtime, Config{HostModule: "env", CacheDir: dir, MemoryLimitPages: 2,
			HostFuncs: []HostFunc{{Name: "report", Type: FuncType{Params: []ValueType{I64}},
				Call: func(_ context.Context, _ Memory, stack []uint64) error {
					mu.Lock()
					defer mu.Unlock()
					reports = append(reports, stack[0])
					return nil
				}}}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := e.Compile(ctx, wasm, CompileOptions{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(ctx, m, wtRunConfig()); err != nil {
			t.Fatal(err)
		}
		if !m.Snapshotted() || !slices.Equal(reports, want) {
			t.Errorf("engine %d: Snapshotted() = %v, reports %v; want true, %v", i+1, m.Snapshotted(), reports, want)
		}
		m.Close(ctx)
		e.Close(ctx)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "wasmtime-go-v39.0.1", "*"+snapshotTag+".cwasm")); len(files) != 1 {
		t.Errorf("cache files %v; want the snapshot's", files)
	}
}

// TestWasmtimeReactorTrap: a trap in a reactor's skein_main reads the
// same on both engines, from a snapshot or not: wazero calls skein_main
// after instantiation, so its error names no start function.
func TestWasmtimeReactorTrap(t *testing.T) {
	wat := `(module (import "env" "report" (func (param i64)))
		(memory (export "memory") 1) (data (i32.const 32) "skein")
		(func (export "_initialize")) (func (export "skein_main") unreachable))`
	for _, noSnap := range []bool{false, true} {
		var texts []string
		for _, name := range []string{Wazero, Wasmtime} {
			var reports []uint64
			e := snapEngine(t, name, noSnap, &reports)
			err := e.Run(context.Background(), wtCompile(t, e, wat), wtRunConfig())
			if err == nil {
				t.Fatalf("%s: the trap was not an error", name)
			}
			texts = append(texts, err.Error())
		}
		if want := "wasm error: unreachable\nwasm stack trace:\n\t.$2()"; texts[0] != texts[1] || !strings.HasPrefix(texts[0], want) {
			t.Errorf("nosnapshots=%v: wazero %q, wasmtime %q; want both %q...", noSnap, texts[0], texts[1], want)
		}
	}
}
