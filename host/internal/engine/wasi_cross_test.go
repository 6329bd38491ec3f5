//go:build wasmtime

package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// wasiProbe calls WASI functions as a guest would, each with its errno
// stored at 1024+4k, and hands memory to the host's "done".
const wasiProbe = `(module
  (import "env" "done" (func $done (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock_time_get (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_res_get" (func $clock_res_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_fdstat_get" (func $fd_fdstat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $fd_prestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "sched_yield" (func $sched_yield (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "sock_accept" (func $sock_accept (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_filestat_get" (func $fd_filestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_seek" (func $fd_seek (param i32 i64 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 2500) "\28\0a\00\00\05\00\00\00")
  (data (i32.const 2600) "hello")
  (data (i32.const 3024) "\40\42\0f\00\00\00\00\00")
  (data (i32.const 3300) "/etc")
  (data (i32.const 3500) "\10\0e\00\00\0a\00\00\00")
  (func (export "_start")
    (i32.store (i32.const 1024) (call $args_sizes_get (i32.const 2000) (i32.const 2004)))
    (i32.store (i32.const 1028) (call $args_get (i32.const 2008) (i32.const 2100)))
    (i32.store (i32.const 1032) (call $environ_sizes_get (i32.const 2200) (i32.const 2204)))
    (i32.store (i32.const 1036) (call $clock_time_get (i32.const 0) (i64.const 1) (i32.const 2300)))
    (i32.store (i32.const 1040) (call $clock_time_get (i32.const 1) (i64.const 1) (i32.const 2308)))
    (i32.store (i32.const 1044) (call $clock_time_get (i32.const 2) (i64.const 1) (i32.const 2316)))
    (i32.store (i32.const 1048) (call $clock_res_get (i32.const 0) (i32.const 2324)))
    (i32.store (i32.const 1052) (call $random_get (i32.const 2400) (i32.const 16)))
    (i32.store (i32.const 1056) (call $fd_write (i32.const 1) (i32.const 2500) (i32.const 1) (i32.const 2520)))
    (i32.store (i32.const 1060) (call $fd_write (i32.const 2) (i32.const 2500) (i32.const 1) (i32.const 2524)))
    (i32.store (i32.const 1064) (call $fd_write (i32.const 7) (i32.const 2500) (i32.const 1) (i32.const 2528)))
    (i32.store (i32.const 1068) (call $fd_fdstat_get (i32.const 1) (i32.const 2700)))
    (i32.store (i32.const 1072) (call $fd_fdstat_get (i32.const 0) (i32.const 2730)))
    (i32.store (i32.const 1076) (call $fd_fdstat_get (i32.const 3) (i32.const 2760)))
    (i32.store (i32.const 1080) (call $fd_prestat_get (i32.const 3) (i32.const 2800)))
    (i32.store (i32.const 1084) (call $fd_close (i32.const 5)))
    (i32.store (i32.const 1088) (call $sched_yield))
    (i32.store (i32.const 1092) (call $poll_oneoff (i32.const 3000) (i32.const 3100) (i32.const 1) (i32.const 3200)))
    (i32.store (i32.const 1096) (call $path_open (i32.const 3) (i32.const 0) (i32.const 3300) (i32.const 4) (i32.const 0) (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 3400)))
    (i32.store (i32.const 1100) (call $sock_accept (i32.const 3) (i32.const 0) (i32.const 3410)))
    (i32.store (i32.const 1104) (call $fd_read (i32.const 0) (i32.const 3500) (i32.const 1) (i32.const 3520)))
    (i32.store (i32.const 1108) (call $fd_read (i32.const 9) (i32.const 3500) (i32.const 1) (i32.const 3524)))
    (i32.store (i32.const 1112) (call $fd_filestat_get (i32.const 9) (i32.const 3800)))
    (i32.store (i32.const 1116) (call $fd_seek (i32.const 9) (i64.const 0) (i32.const 0) (i32.const 3900)))
    (i32.store (i32.const 1120) (call $random_get (i32.const 65530) (i32.const 16)))
    (i32.store (i32.const 1124) (call $clock_time_get (i32.const 0) (i64.const 1) (i32.const 65534)))
    (i32.store (i32.const 1128) (call $fd_filestat_get (i32.const 1) (i32.const 3800)))
    (i32.store (i32.const 1132) (call $fd_seek (i32.const 1) (i64.const 0) (i32.const 0) (i32.const 3900)))
    (i32.store (i32.const 1136) (call $sock_accept (i32.const 0) (i32.const 0) (i32.const 3410)))
    (i32.store (i32.const 1140) (call $path_open (i32.const 1) (i32.const 0) (i32.const 3301) (i32.const 3) (i32.const 0) (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 3400)))
    (i32.store (i32.const 1144) (call $fd_read (i32.const 1) (i32.const 3500) (i32.const 1) (i32.const 3524)))
    (i32.store (i32.const 1148) (call $fd_write (i32.const 0) (i32.const 2500) (i32.const 1) (i32.const 2528)))
    (i32.store (i32.const 1152) (call $fd_close (i32.const 2)))
    (i32.store (i32.const 1156) (call $fd_write (i32.const 2) (i32.const 2500) (i32.const 1) (i32.const 2524)))
    (drop (call $done (i32.const 0)))))`

// TestWASICrossEngine: the WASI functions a guest sees answer the same
// on both engines: the same errno, the same bytes written to memory,
// the same output and the same virtual sleeps.
func TestWASICrossEngine(t *testing.T) {
	wasm, err := wasmtime.Wat2Wasm(wasiProbe)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		mem           []byte
		stdout, sleep string
	}
	probe := func(name string) seen {
		var s seen
		e, err := New(context.Background(), name, Config{HostModule: "env", MemoryLimitPages: 2, Interruptible: true,
			HostFuncs: []HostFunc{{Name: "done", Type: FuncType{Params: []ValueType{I32}, Results: []ValueType{I32}},
				Call: func(_ context.Context, mem Memory, _ []uint64) error {
					b, _ := mem.Read(1024, 3072)
					s.mem = bytes.Clone(b)
					return nil
				}}}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(context.Background())
		m, err := e.Compile(context.Background(), wasm, CompileOptions{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(context.Background())
		var out, errOut strings.Builder
		rand := make([]byte, 64)
		for i := range rand {
			rand[i] = byte(i * 7)
		}
		err = e.Run(context.Background(), m, RunConfig{Args: []string{"workflow", "x"}, Stdout: &out, Stderr: &errOut,
			Walltime: func() (int64, int32) { return 1700000000, 5 }, Nanotime: func() int64 { return 42 },
			Nanosleep: func(ns int64) { s.sleep += fmt.Sprint(ns, " ") }, Rand: bytes.NewReader(rand)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s.stdout = out.String() + "|" + errOut.String()
		return s
	}
	z, w := probe(Wazero), probe(Wasmtime)
	if z.stdout != w.stdout || z.sleep != w.sleep {
		t.Errorf("output %q, sleeps %q on wazero; %q, %q on wasmtime", z.stdout, z.sleep, w.stdout, w.sleep)
	}
	for i := 0; i < 34; i++ {
		if a, b := z.mem[4*i], w.mem[4*i]; a != b {
			t.Errorf("call %d: errno %d on wazero, %d on wasmtime", i, a, b)
		}
	}
	for off := 0; off < len(z.mem); off += 16 {
		if a, b := z.mem[off:off+16], w.mem[off:off+16]; !bytes.Equal(a, b) {
			t.Errorf("memory at %d: %x on wazero, %x on wasmtime", 1024+off, a, b)
		}
	}
}
