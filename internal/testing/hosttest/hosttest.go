// Package hosttest runs example workflows through the real host for the
// examples' own tests: build to wasm, deploy, run, and return the run and
// its outcomes.
package hosttest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// Env is a host on a fresh SQLite file with one example module deployed.
type Env struct {
	T      *testing.T
	Host   *host.Host
	Store  store.Store
	Module store.Module
}

// New builds pkg (relative to the module root) to wasm and deploys it on a
// new host with the eviction policy; both are closed when the test ends.
func New(t *testing.T, pkg string, evict host.Evict) *Env {
	t.Helper()
	return NewModule(t, wasmbuild.Build(t, pkg), filepath.Base(pkg), evict)
}

// NewModule deploys the module at wasmPath (built by any toolchain) under
// name on a new host with the eviction policy; both are closed when the
// test ends.
func NewModule(t *testing.T, wasmPath, name string, evict host.Evict) *Env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close the store: %v", err)
		}
	})
	// Compiled modules are cached on disk across test processes.
	cache := testcache.Shared()
	// SKEIN_TEST_ENGINE runs the hosts of the host package's suite on
	// another engine (make test-wasmtime).
	h, err := host.New(ctx, host.Config{Store: st, Evict: evict, CacheDir: cache, Engine: os.Getenv("SKEIN_TEST_ENGINE")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(ctx); err != nil {
			t.Errorf("close the host: %v", err)
		}
	})
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(ctx, name, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{T: t, Host: h, Store: st, Module: m}
}

// Start starts a run of workflow with input.
func (e *Env) Start(workflow, input string) store.Run {
	e.T.Helper()
	r, err := e.Host.Start(context.Background(), host.StartOptions{Module: e.Module.Hash, Workflow: workflow, Input: json.RawMessage(input)})
	if err != nil {
		e.T.Fatal(err)
	}
	return r
}

// Drive drives a run (waiting for its timers) until it ends or suspends.
func (e *Env) Drive(id string) store.Run {
	e.T.Helper()
	r, err := e.Host.Drive(context.Background(), id, host.DriveOptions{WaitTimers: true})
	if err != nil {
		e.T.Fatal(err)
	}
	return r
}

// DriveCount is Drive that also returns the number of executions (1: no
// replay).
func (e *Env) DriveCount(id string) (store.Run, int) {
	e.T.Helper()
	n := 0
	r, err := e.Host.Drive(context.Background(), id, host.DriveOptions{WaitTimers: true, OnExecution: func() { n++ }})
	if err != nil {
		e.T.Fatal(err)
	}
	return r, n
}

// DriveNoWait drives a run until it ends or suspends, without waiting for
// its timers.
func (e *Env) DriveNoWait(id string) store.Run {
	e.T.Helper()
	r, err := e.Host.Drive(context.Background(), id, host.DriveOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return r
}

// Verify checks that a verifying replay of the run reaches the same end,
// and returns the run's outcomes in settle order.
func (e *Env) Verify(r store.Run) []store.Outcome {
	e.T.Helper()
	ctx := context.Background()
	rr, err := e.Host.Replay(ctx, r.ID)
	if err != nil {
		e.T.Fatalf("replay: %v", err)
	}
	want := r.Status
	if want == store.RunCanceled { // the replay sees the root task end
		want = store.RunCompleted
		if len(r.Result) == 0 {
			want = store.RunFailed
		}
	}
	if rr.Status != want || string(rr.Result) != string(r.Result) {
		e.T.Fatalf("replay reached %s %s, the run %s %s", rr.Status, rr.Result, r.Status, r.Result)
	}
	outs, err := e.Store.Outcomes(ctx, r.ID) // the journal's rows, for tests of the journal
	if err != nil {
		e.T.Fatal(err)
	}
	return outs
}

// Run builds pkg (relative to the module root), runs workflow with input
// under the eviction policy against a fresh SQLite file, checks that a
// verifying replay reaches the same end, and returns the run and its
// outcomes in settle order.
func Run(t *testing.T, pkg, workflow, input string, evict host.Evict) (store.Run, []store.Outcome) {
	t.Helper()
	e := New(t, pkg, evict)
	r := e.Drive(e.Start(workflow, input).ID)
	return r, e.Verify(r)
}

// RunModule is Run for a module built by any toolchain (wasmPath); it
// also returns the number of executions of the run (1: no replay).
func RunModule(t *testing.T, wasmPath, workflow, input string, evict host.Evict) (store.Run, []store.Outcome, int) {
	t.Helper()
	e := NewModule(t, wasmPath, filepath.Base(wasmPath), evict)
	r, n := e.DriveCount(e.Start(workflow, input).ID)
	return r, e.Verify(r), n
}

// Evicts lists every eviction policy.
var Evicts = []host.Evict{host.EvictNever, host.EvictIdle, host.EvictAlways}

// Keys returns the keys of outcomes in order.
func Keys(outs []store.Outcome) []string {
	ks := make([]string, len(outs))
	for i, o := range outs {
		ks[i] = o.Key
	}
	return ks
}

// Outcome returns the outcome at key, failing the test if there is none.
func Outcome(t *testing.T, outs []store.Outcome, key string) store.Outcome {
	t.Helper()
	for _, o := range outs {
		if o.Key == key {
			return o
		}
	}
	t.Fatalf("no outcome at key %q; keys: %q", key, Keys(outs))
	return store.Outcome{}
}
