package host

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
)

// goodRun drives a well-behaved run (examples/sequence, n=50) alongside
// a hostile one; the returned func checks that it completed.
func goodRun(t *testing.T, h *testHost, id string) func() {
	t.Helper()
	seq := h.deploy(t, "./examples/sequence")
	ctx := context.Background()
	done := make(chan store.Run, 1)
	go func() {
		r, err := h.Start(ctx, StartOptions{Module: seq.Hash, Workflow: "sequence", Input: []byte(`{"n":50}`), ID: id})
		if err == nil {
			r, err = h.Drive(ctx, r.ID, DriveOptions{})
		}
		if err != nil {
			r.Error = err.Error()
		}
		done <- r
	}()
	return func() {
		t.Helper()
		if g := <-done; g.Status != store.RunCompleted || string(g.Result) != "1275" {
			t.Errorf("the concurrent well-behaved run %s: %s %s %s", id, g.Status, g.Result, g.Error)
		}
	}
}

func echoActivity(_ context.Context, in []byte) ([]byte, error) { return in, nil }

// TestHostileModule runs every attack of testdata/workflows/hostile (a
// module on the raw ABI) and checks the exact error each ends its run
// with, that the host did not panic, and that a concurrent well-behaved
// run completed.
func TestHostileModule(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	h.RegisterActivity("echo", echoActivity)
	m := h.deploy(t, "./testdata/workflows/hostile")
	oob := "guest passed an out-of-bounds buffer "
	for _, tc := range []struct{ attack, want string }{
		{"oob-name", oob + "(offset 4294967040, length 64)"},
		{"oob-len", oob + "(offset 0, length 2147483647)"},
		{"oob-reply", oob + "(offset 4294967040, capacity 255)"},
		{"oob-take", oob + "to take (offset 4294967040, length 9)"},
		{"oob-step-data", oob + "(offset 4294967040, length 4096)"},
		{"oob-rand", oob + "(offset 4294967040, length 4096)"},
		{"oob-select", oob + "(offset 4294967040, length 16)"},
		{"take-none", "guest called take(10 bytes) with no message of that size pending"},
		{"take-twice", "guest called take(9 bytes) with no message of that size pending"},
		{"unknown-task", "unknown task handle 99"},
		{"not-running", "task 1 issued a call while it is not the running task"},
		{"unknown-promise", "unknown promise handle 4242"},
		{"promise-zero", "unknown promise handle 0"},
		{"unknown-fork", "task 1: unknown fork handle 7"},
		{"await-own-join", "task 1 awaits its own completion"},
		{"settle-twice", "task 1 reported step promise 2 done, but it is not running that step's body"},
		{"task-done-twice", "task 2 issued a call while it is not the running task"},
		{"op-after-task-done", "task 2 issued a call while it is not the running task"},
		{"next-while-running", "task 1 called next without waiting on anything (await, select, body_sleep or task_done first)"},
		{"bad-kind", "unknown op kind 99"},
		{"bad-step-status", "step_done with unknown status 7"},
		{"bad-task-status", "task_done with unknown status 9"},
		{"bad-sleep-arg", "sleep op needs an 8-byte duration, got 2 bytes"},
		{"bad-branch-arg", "branch op needs a 4-byte fork handle, got 3 bytes"},
		{"bad-attrs-arg", `the argument of an attrs op is a JSON object of values by name, got "[1]"`},
		{"empty-fn", "step op without a function name"},
		{"select-none", "task 1 selected on no futures"},
		{"select-huge", "select over 1048576 futures (at most 65536)"},
		{"bad-options", "op_options: bad message: abi: message too short"},
		{"options-task", "op_options: task 5 is not the running task"},
		{"oob-feed", oob + "(offset 4294967040, capacity 64)"},
		{"feed-task", "feed: task 5 is not the running task"},
		{"feed-unfed", "feed: task 1 reports 3 fed ops used, but its last feed gave it 0"},
		{"options-sleep", "retry and timeout options apply to steps and calls only, not to a sleep op"},
		{"real-now-outside", "real time is only available inside a step body (StepContext); workflow code gets virtual time and seeded randomness"},
		{"real-rand-outside", "real randomness is only available inside a step body (StepContext); workflow code gets virtual time and seeded randomness"},
		{"body-sleep-outside", "task 1 waited in a step body, but it is not in one"},
		{"op-in-body", `task 1 issued a step op inside the body of step "1": step bodies must not issue durable ops`},
		{"await-in-body", "task 1 awaited a future inside a step body"},
		{"unknown-activity", `activity "no-such-activity" is not registered on this host (called at key "1")`},
		{"huge-step-value", "the value of step promise 2 is 5242880 bytes (limit Config.MaxPayloadBytes = 4194304 bytes (4 MiB); --max-payload-bytes)"},
		{"huge-result", "the result of task 1 is 5242880 bytes (limit Config.MaxPayloadBytes = 4194304 bytes (4 MiB); --max-payload-bytes)"},
		{"huge-call-input", `the input of call op "echo" is 5242880 bytes (limit Config.MaxPayloadBytes = 4194304 bytes (4 MiB); --max-payload-bytes)`},
	} {
		t.Run(tc.attack, func(t *testing.T) {
			check := goodRun(t, h, "good-"+tc.attack)
			r := h.runToEnd(t, m, tc.attack, "null", "hostile-"+tc.attack)
			if r.Status != store.RunFailed || r.Error != tc.want {
				t.Errorf("%s: %s %q\nwant failed with %q", tc.attack, r.Status, r.Error, tc.want)
			}
			check()
		})
	}
	// The well-behaved workflow of the same module works.
	if r := h.runToEnd(t, m, "ok", "null", "hostile-ok"); r.Status != store.RunCompleted || string(r.Result) != `"fine"` {
		t.Errorf("ok: %s %s %q", r.Status, r.Result, r.Error)
	}
	// A call after the root returned never runs: the host ends the module
	// inside the root's task_done, and the run keeps its result.
	r := h.runToEnd(t, m, "op-after-return", "null", "hostile-after-return")
	if r.Status != store.RunCompleted || string(r.Result) != `"done"` {
		t.Errorf("op-after-return: %s %s %q", r.Status, r.Result, r.Error)
	}
	if outs := h.outcomes(t, r.ID); len(outs) != 0 {
		t.Errorf("op-after-return recorded %v", keysOf(outs))
	}
	// Settling a step twice does not change its recorded value.
	outs := h.outcomes(t, "hostile-settle-twice")
	if len(outs) != 1 || string(outs[0].Value) != "1" {
		t.Errorf("settle-twice outcomes: %+v", outs)
	}
}

// TestModuleValidation: each module skein cannot run is rejected at
// deploy with a precise message.
func TestModuleValidation(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxRunWithoutYield: 300 * time.Millisecond})
	ctx := context.Background()
	read := func(pkg string) []byte {
		b, err := os.ReadFile(wasmbuild.Build(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	reactor := func(pkg string) []byte {
		b, err := os.ReadFile(wasmbuild.BuildReactor(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"abi2", read("./testdata/workflows/hostile/abi2"), "module abi2 rejected: the module speaks skein ABI v2; this host speaks ABI v1"},
		{"wasisock", read("./testdata/workflows/hostile/wasisock"), "module wasisock rejected: it imports wasi_snapshot_preview1.sock_open, which skein does not provide (no sockets, no network; see abi/README.md §2)"},
		{"badschema", read("./testdata/workflows/hostile/badschema"), `module badschema rejected: input_schema for workflow "b", which the module did not announce (it announces: a)`},
		{"noworkflows", read("./testdata/workflows/hostile/noworkflows"), "module noworkflows rejected: it registers no workflows (call skein.Register before skein.Main)"},
		{"initloop", read("./testdata/workflows/hostile/initloop"), "module initloop rejected: workflow code ran 300ms without yielding to the host (limit Config.MaxRunWithoutYield = 300ms; --max-run-without-yield)"},
		{"initspin", read("./testdata/workflows/hostile/initspin"), "module initspin rejected: workflow code ran 300ms without yielding to the host (limit Config.MaxRunWithoutYield = 300ms; --max-run-without-yield)"},
		{"initspin-reactor", reactor("./testdata/workflows/hostile/initspin"), "module initspin-reactor rejected: workflow code ran 300ms without yielding to the host (limit Config.MaxRunWithoutYield = 300ms; --max-run-without-yield)"},
		{"noentry-reactor", reactor("./testdata/workflows/hostile/noentry"), "module noentry-reactor rejected: not a skein module: it exports no _start function (a WASI command: build a main package), nor _initialize and skein_main (a reactor: build a main package with -buildmode=c-shared)"},
		{"version2", []byte("\x00asm\x02\x00\x00\x00"), "module version2 rejected: unsupported WebAssembly binary version [2 0 0 0] (want 1)"},
		{"huge", append([]byte("\x00asm\x01\x00\x00\x00"), make([]byte, DefaultMaxModuleBytes)...), "module huge rejected: the module is 67108872 bytes (limit Config.MaxModuleBytes = 67108864 bytes (64 MiB); --max-module-bytes)"},
	} {
		_, err := h.Deploy(ctx, tc.name, tc.wasm)
		var me *ModuleError
		if !errors.As(err, &me) || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant a ModuleError %q", tc.name, err, tc.want)
		}
	}
}
