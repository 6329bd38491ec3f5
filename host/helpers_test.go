package host

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/skeinrun/skein/internal/limitflags"
	"github.com/skeinrun/skein/internal/testing/testcache"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// counters counts step-body executions and instantiations per run.
type counters struct {
	mu     sync.Mutex
	bodies map[string]int // run/key -> executions
	execs  map[string]int
}

func (c *counters) body(run, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodies[run+"/"+key]++
}

func (c *counters) exec(run string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.execs[run]++
}

func (c *counters) bodiesOf(run string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.bodies {
		if len(k) > len(run) && k[:len(run)+1] == run+"/" {
			out[k[len(run)+1:]] = n
		}
	}
	return out
}

type testHost struct {
	*Host
	st store.Store
	c  *counters
}

// cacheDir shares compiled modules between the tests of this process,
// and with later test processes when SKEIN_TEST_CACHE_DIR names a folder
// (.ci/run: the race detector's run then compiles nothing again).
var cacheDir string

// The package's test hosts take these (withTestDefaults): the engine of
// SKEIN_TEST_ENGINE (make test-wasmtime runs the suite on wasmtime), the
// journal cache checked against the store on every answer from memory
// (not in benchmarks), and Config.GoMemory while a benchmark asks for it
// (UseGoMemory).
var (
	testEngine     string
	verifyJournals bool
	testGoMemory   bool
)

// withTestDefaults is hooks with the engine and the journal check of the
// package's tests.
func withTestDefaults(hooks testHooks) testHooks {
	hooks.engine, hooks.verifyJournals = testEngine, verifyJournals
	return hooks
}

func TestMain(m *testing.M) {
	// SKEIN_TEST_ENGINE=wasmtime runs the suite on wasmtime (a test binary
	// built with -tags wasmtime; make test-wasmtime).
	testEngine = os.Getenv("SKEIN_TEST_ENGINE")
	// Every journal the host answers from memory is compared with the
	// store's (journalcache.go), except in benchmarks.
	flag.Parse()
	verifyJournals = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(testcache.Run(m, "skein-host-test-cache-", &cacheDir))
}

func newTestHost(t testing.TB, cfg Config) *testHost {
	return newTestHostHooks(t, cfg, testHooks{})
}

// newTestHostHooks is newTestHost with test hooks (its counters replace
// onBody and onExec).
func newTestHostHooks(t testing.TB, cfg Config, hooks testHooks) *testHost {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = cacheDir
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &counters{bodies: map[string]int{}, execs: map[string]int{}}
	cfg.Store = st
	if os.Getenv("SKEIN_NO_MEM_IMAGES") != "" { // benchmarks compare (docs/PERFORMANCE.md)
		cfg.DisableMemoryImages = true
	}
	if os.Getenv("SKEIN_NO_SNAPSHOTS") != "" { // the suite without snapshots (make test-no-snapshots)
		cfg.DisableSnapshots = true
	}
	if cfg.LimitHint == nil {
		cfg.LimitHint = limitflags.Flag // as the CLI: its messages are the ones asserted
	}
	hooks.onBody, hooks.onExec = c.body, c.exec
	cfg.GoMemory = cfg.GoMemory || testGoMemory
	h, err := newHost(ctx, cfg, withTestDefaults(hooks))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close(ctx)
		st.Close()
	})
	return &testHost{Host: h, st: st, c: c}
}

// deploy builds a package to wasm and deploys it.
func (h *testHost) deploy(t testing.TB, pkg string) store.Module {
	t.Helper()
	wasm, err := os.ReadFile(wasmbuild.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(context.Background(), filepath.Base(pkg), wasm)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runToEnd starts and drives a run.
func (h *testHost) runToEnd(t testing.TB, m store.Module, workflow, input, id string) store.Run {
	t.Helper()
	ctx := context.Background()
	r, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: workflow, Input: json.RawMessage(input), ID: id, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	r, err = h.Drive(ctx, r.ID, DriveOptions{WaitTimers: true})
	if err != nil && !IsDivergence(err) {
		t.Fatal(err)
	}
	return r
}

// probeRun runs workflow of the probe module to its end on a new host
// with eviction mode, and fails the test unless the run completed.
func probeRun(t *testing.T, mode Evict, workflow, input string) (*testHost, store.Run) {
	t.Helper()
	h := newTestHost(t, Config{Evict: mode})
	m := h.deploy(t, "./testdata/workflows/probe")
	r := h.runToEnd(t, m, workflow, input, workflow)
	if r.Status != store.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	return h, r
}

func (h *testHost) outcomes(t testing.TB, run string) []store.Outcome {
	t.Helper()
	os, err := h.st.Outcomes(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	return os
}

func keysOf(os []store.Outcome) []string {
	ks := make([]string, len(os))
	for i, o := range os {
		ks[i] = o.Key
	}
	sort.Strings(ks)
	return ks
}

func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}
