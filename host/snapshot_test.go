package host

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
)

// snapshotsTaken reports whether the test hosts start reactors from
// snapshots: wazero maps the snapshot's memory image (Linux only, and
// not with the images off, SKEIN_NO_MEM_IMAGES); wasmtime compiles the
// module rewritten to start in that state.
func snapshotsTaken() bool {
	if os.Getenv("SKEIN_NO_SNAPSHOTS") != "" {
		return false
	}
	if testEngine == EngineWasmtime {
		return true
	}
	return runtime.GOOS == "linux" && os.Getenv("SKEIN_NO_MEM_IMAGES") == ""
}

// A reactor module's instances start from its snapshot: its package
// initialisation and its main up to skein.Main (skein_prepare) run once,
// when the host compiles it, in the world of module start-up (the Unix
// epoch), and never in a run's executions. With DisableSnapshots every
// execution runs both, at the run's time. The result is the same live
// and on replay either way.
func TestReactorSnapshot(t *testing.T) {
	wasm, err := os.ReadFile(wasmbuild.BuildReactor(t, "./testdata/workflows/reactor"))
	if err != nil {
		t.Fatal(err)
	}
	canSnapshot := snapshotsTaken()
	for _, disable := range []bool{false, true} {
		out := &syncBuffer{}
		h := newTestHost(t, Config{Evict: EvictAlways, DisableSnapshots: disable, GuestOutput: out})
		ctx := context.Background()
		m, err := h.Deploy(ctx, "reactor", wasm)
		if err != nil {
			t.Fatal(err)
		}
		snap := snapshotted(t, h, m.Hash)
		if want := canSnapshot && !disable; snap != want {
			t.Fatalf("DisableSnapshots=%v: Snapshotted() = %v, want %v", disable, snap, want)
		}
		before := strings.Count(out.String(), "package initialised")
		mainsBefore := strings.Count(out.String(), "main ran")
		r, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "twice", ID: "reactor-run"})
		if err != nil {
			t.Fatal(err)
		}
		r, err = h.Drive(ctx, r.ID, DriveOptions{WaitTimers: true})
		if err != nil || r.Status != store.RunCompleted {
			t.Fatalf("drive: %v %s %s", err, r.Status, r.Error)
		}
		execs := h.c.execs[r.ID]
		if execs < 2 {
			t.Fatalf("no replay happened (%d executions)", execs)
		}
		inits := strings.Count(out.String(), "package initialised") - before
		mains := strings.Count(out.String(), "main ran") - mainsBefore
		var got []string
		mustJSON(t, r.Result, &got)
		if len(got) != 4 {
			t.Fatalf("result %q, want 4 values", got)
		}
		const epoch = "1970-01-01T00:00:00Z"
		switch {
		case snap && (inits != 0 || mains != 0 || got[0] != epoch || got[3] != epoch):
			t.Errorf("snapshot: %d executions ran the start-up and %d main, want none; package and main at %q and %q, want the epoch", inits, mains, got[0], got[3])
		case !snap && (inits != execs || mains != execs || got[0] == epoch || got[3] == epoch):
			t.Errorf("no snapshot: %d and %d of %d executions ran the start-up and main, want all; package and main at %q and %q, want the run's time", inits, mains, execs, got[0], got[3])
		}
		rr, err := h.Replay(ctx, r.ID)
		if err != nil || string(rr.Result) != string(r.Result) {
			t.Errorf("replay = %s, %v; live %s", rr.Result, err, r.Result)
		}
	}
}

// Instances of a snapshotted reactor are reset and reused: every run
// sees the package state and the random stream of a new instance, live
// and on replay, whether its instance is new or reused, whether the
// previous run on it completed or was dropped mid-run, and whether it
// grew its heap (an instance whose memory grew is not reused).
func TestInstanceReuse(t *testing.T) {
	if testEngine == "wasmtime" || !snapshotsTaken() {
		t.Skip("instances are reused on wazero, on Linux, with snapshots")
	}
	wasm, err := os.ReadFile(wasmbuild.BuildReactor(t, "./testdata/workflows/reactor"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var fresh string // what a run on a new instance returns
	for _, tc := range []struct {
		name      string
		cfg       Config
		input     string
		wantReuse bool
	}{
		{"new instances", Config{DisableInstanceReuse: true}, `{}`, false},
		{"reused after completion", Config{}, `{}`, true},
		{"reused after drops", Config{Evict: EvictAlways}, `{"Sleep":1}`, true},
		{"heap grown", Config{}, `{"KB":65536}`, false},
	} {
		h := newTestHost(t, tc.cfg)
		m, err := h.Deploy(ctx, "reactor", wasm)
		if err != nil {
			t.Fatal(err)
		}
		var afterFirst uint64 // the first run may take the instance of the module's describe
		for i := range 4 {
			r, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "state", Input: []byte(tc.input), ID: fmt.Sprintf("state-%d", i)})
			if err != nil {
				t.Fatal(err)
			}
			r, err = h.Drive(ctx, r.ID, DriveOptions{WaitTimers: true})
			if err != nil || r.Status != store.RunCompleted {
				t.Fatalf("%s: drive: %v %s %s", tc.name, err, r.Status, r.Error)
			}
			if fresh == "" {
				fresh = string(r.Result)
			}
			if string(r.Result) != fresh {
				t.Errorf("%s: run %d saw %s, a new instance sees %s", tc.name, i, r.Result, fresh)
			}
			if rr, err := h.Replay(ctx, r.ID); err != nil || string(rr.Result) != fresh {
				t.Errorf("%s: replay of run %d = %s, %v; want %s", tc.name, i, rr.Result, err, fresh)
			}
			if i == 0 {
				afterFirst = h.metrics.NS("").Reused.Load()
			}
		}
		if reused := h.metrics.NS("").Reused.Load() - afterFirst; (reused > 0) != tc.wantReuse {
			t.Errorf("%s: %d executions of later runs on reused instances, want reuse %v", tc.name, reused, tc.wantReuse)
		}
	}
}

// An instance whose execution was interrupted (its context ended during
// the call) is never reused: with interrupts on, wazero may close it at
// any moment after. The run after it starts on another instance and
// completes.
func TestInstanceNotReusedAfterInterrupt(t *testing.T) {
	if !snapshotsTaken() || testEngine == EngineWasmtime {
		t.Skip("instances are reused on wazero, on Linux, with snapshots")
	}
	h := newTestHost(t, Config{CompileTimeout: -1})
	m := h.deploy(t, featuresPkg)
	ctx, cancel := context.WithCancel(context.Background())
	h.RegisterActivity("interrupt", func(actx context.Context, _ []byte) ([]byte, error) {
		cancel() // the drive's context ends while the guest waits on this call
		<-actx.Done()
		return nil, actx.Err()
	})
	h.RegisterActivity("up", func(context.Context, []byte) ([]byte, error) { return []byte(`"up"`), nil })
	r := startRun(t, h, m, "call", `{"activity":"interrupt","max":1}`, 0)
	if _, err := h.Drive(ctx, r.ID, DriveOptions{}); err == nil {
		t.Fatal("the drive whose context ended returned no error")
	}
	before := h.metrics.NS("").Reused.Load()
	r2 := startRun(t, h, m, "call", `{"activity":"up","max":1}`, 0)
	r2 = drive(t, h, r2.ID, DriveOptions{})
	if r2.Status != store.RunCompleted {
		t.Fatalf("the run after the interrupted one: %s %s", r2.Status, r2.Error)
	}
	if got := h.metrics.NS("").Reused.Load(); got != before {
		t.Errorf("the run after the interrupted one ran on a reused instance (%d -> %d): the interrupted instance went back to the pool", before, got)
	}
}

// A module whose main never calls skein.Main is refused at deploy with
// an error that says so: a reactor's skein_prepare (the Go SDK) fails
// when main returns, a command ends without announcing its workflows.
func TestDeployMainWithoutSkeinMain(t *testing.T) {
	h := newTestHost(t, Config{})
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/nomain"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Deploy(context.Background(), "nomain", wasm)
	want := "does main call skein.Main?"
	if wasmbuild.Reactor() {
		want = "skein: main returned without calling skein.Main"
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Deploy = %v, want an error containing %q", err, want)
	}
}
