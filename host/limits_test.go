package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
)

// wantLimit checks that a run failed with exactly want as the first line
// of its error, and that the stored run says the same.
func wantLimit(t *testing.T, h *testHost, r store.Run, want string) {
	t.Helper()
	first, _, _ := strings.Cut(r.Error, "\n")
	if r.Status != store.RunFailed || first != want {
		t.Errorf("run %s: %s %q\nwant failed with %q", r.ID, r.Status, r.Error, want)
	}
	stored, err := h.st.Run(context.Background(), r.ID)
	if err != nil || stored.Status != store.RunFailed || stored.Error != r.Error {
		t.Errorf("stored run %s: %s %q %v", r.ID, stored.Status, stored.Error, err)
	}
}

// A memory bomb fails its run with the memory limit named.
func TestLimitMemory(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MemoryLimitPages: 1024})
	m := h.deploy(t, "./testdata/workflows/limits")
	check := goodRun(t, h, "good")
	r := h.runToEnd(t, m, "membomb", "null", "membomb")
	wantLimit(t, h, r, "the module ran out of linear memory (limit Config.MemoryLimitPages = 1024 pages (64 MiB); --max-memory-mib)")
	// A Go command exits with code 2 on a fatal error; a reactor, which
	// cannot exit, traps (abi/README.md, "Start-up and snapshots").
	end := "the module exited with code 2"
	if wasmbuild.Reactor() {
		end = "the module trapped: wasm error: unreachable"
	}
	if !strings.Contains(r.Error, end) || !strings.Contains(r.Error, "out of memory") {
		t.Errorf("membomb error lacks the guest's own report: %q", r.Error)
	}
	check()
}

// An infinite loop is interrupted; work that yields often runs on.
func TestLimitRunWithoutYield(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxRunWithoutYield: 300 * time.Millisecond})
	m := h.deploy(t, "./testdata/workflows/limits")
	check := goodRun(t, h, "good")
	start := time.Now()
	r := h.runToEnd(t, m, "spin", "null", "spin")
	wantLimit(t, h, r, "workflow code ran 300ms without yielding to the host (limit Config.MaxRunWithoutYield = 300ms; --max-run-without-yield)")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the loop was stopped after %s", d)
	}
	// What was recorded before the loop stays.
	if outs := h.outcomes(t, "spin"); len(outs) != 1 || outs[0].Function != "before" {
		t.Errorf("spin outcomes: %v", keysOf(outs))
	}
	check()
	// 3 × 400ms of computing, with host calls in between: not a violation.
	r = h.runToEnd(t, m, "busy", `{"N":3,"MS":400}`, "busy")
	if r.Status != store.RunCompleted || string(r.Result) != "3" {
		t.Errorf("busy: %s %s %q", r.Status, r.Result, r.Error)
	}
}

// Values over the payload limit fail their run; at the limit they pass.
func TestLimitPayload(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxPayloadBytes: 1 << 20})
	h.RegisterActivity("echo", echoActivity)
	m := h.deploy(t, "./testdata/workflows/limits")
	check := goodRun(t, h, "good")
	lim := " (limit Config.MaxPayloadBytes = 1048576 bytes (1 MiB); --max-payload-bytes)"
	over := fmt.Sprint(1<<20 + 1)
	wantLimit(t, h, h.runToEnd(t, m, "bigstep", over, "bigstep"), "the value of step promise 2 is 1048577 bytes"+lim)
	wantLimit(t, h, h.runToEnd(t, m, "bigresult", over, "bigresult"), "the result of task 1 is 1048577 bytes"+lim)
	wantLimit(t, h, h.runToEnd(t, m, "bigcall", over, "bigcall"), `the input of call op "echo" is 1048577 bytes`+lim)
	at := fmt.Sprint(1 << 20)
	for _, wf := range []string{"bigstep", "bigresult", "bigcall"} {
		if r := h.runToEnd(t, m, wf, at, wf+"-at"); r.Status != store.RunCompleted {
			t.Errorf("%s at the limit: %s %.200q", wf, r.Status, r.Error)
		}
	}
	check()
	ctx := context.Background()
	big := []byte(`"` + strings.Repeat("x", 1<<20) + `"`)
	_, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "bigstep", Input: big, ID: "big-input"})
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrInvalid) || err.Error() != "start: the input is 1048578 bytes"+lim {
		t.Errorf("Start with a large input: %v", err)
	}
	r, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "bigstep", Input: []byte("10"), ID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	err = h.Resolve(ctx, r.ID+".1", big, "")
	if !errors.As(err, &le) || !errors.Is(err, ErrInvalid) || err.Error() != "resolve p.1: the promise value is 1048578 bytes"+lim {
		t.Errorf("Resolve with a large value: %v", err)
	}
}

// An op flood fails its run at Config.MaxOps, replayed ops included.
func TestLimitOps(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictAlways} {
		t.Run(string(evict), func(t *testing.T) {
			h := newTestHost(t, Config{Evict: evict, MaxOps: 100})
			m := h.deploy(t, "./testdata/workflows/limits")
			check := goodRun(t, h, "good")
			wantLimit(t, h, h.runToEnd(t, m, "opflood", "150", "flood"), "the run issued more than 100 ops (limit Config.MaxOps = 100; --max-ops)")
			if r := h.runToEnd(t, m, "opflood", "100", "hundred"); r.Status != store.RunCompleted || string(r.Result) != "100" {
				t.Errorf("100 ops: %s %s %q", r.Status, r.Result, r.Error)
			}
			check()
		})
	}
}

// A task flood fails its run at Config.MaxTasks live tasks; tasks that
// ended do not count.
func TestLimitTasks(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxTasks: 50})
	m := h.deploy(t, "./testdata/workflows/limits")
	check := goodRun(t, h, "good")
	wantLimit(t, h, h.runToEnd(t, m, "taskflood", "51", "flood"), "the run has more than 50 live tasks (limit Config.MaxTasks = 50; --max-tasks)")
	if r := h.runToEnd(t, m, "taskflood", "50", "fifty"); r.Status != store.RunCompleted || string(r.Result) != "50" {
		t.Errorf("50 tasks: %s %s %q", r.Status, r.Result, r.Error)
	}
	check()
}

// A module over Config.MaxModuleBytes is rejected before it is compiled.
func TestLimitModuleSize(t *testing.T) {
	h := newTestHost(t, Config{MaxModuleBytes: 1 << 20})
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/limits"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Deploy(context.Background(), "limits", wasm)
	want := fmt.Sprintf("module limits rejected: the module is %d bytes (limit Config.MaxModuleBytes = 1048576 bytes (1 MiB); --max-module-bytes)", len(wasm))
	var me *ModuleError
	if !errors.As(err, &me) || err.Error() != want {
		t.Errorf("deploy: %v\nwant %q", err, want)
	}
}
