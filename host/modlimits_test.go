package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/limitflags"

	"github.com/skeinrun/skein/host/internal/wasmlimits"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/internal/testing/wasmtest"
	"github.com/skeinrun/skein/store"
)

// TestGoModulesWithinModuleLimits: every Go module of the repository is
// within half of every default structure limit (docs/limits.md lists
// what they measure).
func TestGoModulesWithinModuleLimits(t *testing.T) {
	d := DefaultModuleLimits
	for _, pkg := range []string{"./examples/approval", "./examples/fanout", "./examples/provision", "./examples/race",
		"./examples/saga", "./examples/sequence", "./testdata/workflows/escape", "./testdata/workflows/features",
		"./testdata/workflows/hostile", "./testdata/workflows/server", "./testdata/workflows/torture"} {
		wasm, err := os.ReadFile(wasmbuild.Build(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		s, err := wasmlimits.Measure(wasm)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		t.Logf("%s (%d bytes): nesting %d, control ops %d, function bytes %d, functions %d, locals %d, types %d, type values %d, imports %d, exports %d, globals %d, table %d, data segments %d, element segments %d",
			pkg, len(wasm), s.Nesting, s.ControlOps, s.FunctionBytes, s.Functions, s.Locals, s.Types, s.TypeValues,
			s.Imports, s.Exports, s.Globals, s.TableElements, s.DataSegments, s.ElementSegments)
		for _, c := range []struct {
			name       string
			got, limit int64
		}{
			{"nesting", int64(s.Nesting), int64(d.MaxNesting)}, {"control ops", int64(s.ControlOps), int64(d.MaxControlOps)},
			{"function bytes", int64(s.FunctionBytes), int64(d.MaxFunctionBytes)}, {"functions", int64(s.Functions), int64(d.MaxFunctions)},
			{"locals", int64(s.Locals), int64(d.MaxLocals)}, {"types", int64(s.Types), int64(d.MaxTypes)},
			{"type values", int64(s.TypeValues), int64(d.MaxTypeValues)}, {"imports", int64(s.Imports), int64(d.MaxImports)},
			{"exports", int64(s.Exports), int64(d.MaxExports)}, {"globals", int64(s.Globals), int64(d.MaxGlobals)},
			{"table elements", s.TableElements, int64(d.MaxTableElements)}, {"elements", s.Elements, int64(d.MaxTableElements)},
			{"data segments", int64(s.DataSegments), int64(d.MaxDataSegments)}, {"element segments", int64(s.ElementSegments), int64(d.MaxElementSegments)},
		} {
			if c.got > c.limit/2 {
				t.Errorf("%s: %s %d is over half its default limit %d", pkg, c.name, c.got, c.limit)
			}
		}
	}
}

// TestDeployStructureLimits: a module one over a structure limit is
// refused before it is compiled, with a *LimitError naming the Config
// field and the flag; at the limit it deploys.
func TestDeployStructureLimits(t *testing.T) {
	for _, tc := range []struct {
		shape wasmtest.Shape
		set   func(*ModuleLimits, int)
		limit int // the module's measure; the test sets limit-1, then limit
		field string
		what  string
	}{
		{wasmtest.Shape{Nesting: 11}, func(l *ModuleLimits, v int) { l.MaxNesting = v }, 11, "MaxNesting", "function 4 nests blocks 11 deep"},
		{wasmtest.Shape{Functions: 1, Branches: 6}, func(l *ModuleLimits, v int) { l.MaxControlOps = v }, 12, "MaxControlOps", "function 4 has 12 control instructions"},
		{wasmtest.Shape{Functions: 1, BodyOps: 100}, func(l *ModuleLimits, v int) { l.MaxFunctionBytes = v }, 704, "MaxFunctionBytes", "function 4 is 704 bytes"},
		{wasmtest.Shape{Functions: 5}, func(l *ModuleLimits, v int) { l.MaxFunctions = v }, 9, "MaxFunctions", "the module has 9 functions"},
		{wasmtest.Shape{Functions: 1, Locals: 20}, func(l *ModuleLimits, v int) { l.MaxLocals = v }, 20, "MaxLocals", "function 4 declares 20 locals"},
		{wasmtest.Shape{Types: 3}, func(l *ModuleLimits, v int) { l.MaxTypes = v }, 7, "MaxTypes", "the module declares 7 function types"},
		{wasmtest.Shape{Types: 1, TypeValues: 9}, func(l *ModuleLimits, v int) { l.MaxTypeValues = v }, 9, "MaxTypeValues", "function type 4 has 9 parameters and results"},
		{wasmtest.Shape{}, func(l *ModuleLimits, v int) { l.MaxImports = v }, 3, "MaxImports", "the module has 3 imports"},
		{wasmtest.Shape{}, func(l *ModuleLimits, v int) { l.MaxExports = v }, 2, "MaxExports", "the module has 2 exports"},
		{wasmtest.Shape{Globals: 4}, func(l *ModuleLimits, v int) { l.MaxGlobals = v }, 4, "MaxGlobals", "the module has 4 globals"},
		{wasmtest.Shape{TableMin: 100}, func(l *ModuleLimits, v int) { l.MaxTableElements = v }, 100, "MaxTableElements", "a table of the module can reach 100 elements"},
		{wasmtest.Shape{DataSegments: 4}, func(l *ModuleLimits, v int) { l.MaxDataSegments = v }, 5, "MaxDataSegments", "the module has 5 data segments"},
		{wasmtest.Shape{ElementSegments: 3}, func(l *ModuleLimits, v int) { l.MaxElementSegments = v }, 3, "MaxElementSegments", "the module has 3 element segments"},
	} {
		wasm := wasmtest.Shaped(tc.shape)
		var cfg Config
		tc.set(&cfg.ModuleLimits, tc.limit-1)
		h := newTestHost(t, cfg)
		_, err := h.Deploy(context.Background(), "m", wasm)
		want := fmt.Sprintf("module m rejected: %s (limit Config.ModuleLimits.%s = %d; %s)", tc.what, tc.field, tc.limit-1, moduleFlagOf(tc.field))
		var le *LimitError
		if err == nil || err.Error() != want || !errors.As(err, &le) || le.Limit != "ModuleLimits."+tc.field {
			t.Errorf("%s: got %v\nwant %s", tc.field, err, want)
		}
		if m := h.metric(t); m.compiles != 0 {
			t.Errorf("%s: the module was compiled (%d compiles)", tc.field, m.compiles)
		}
		cfg = Config{}
		tc.set(&cfg.ModuleLimits, tc.limit)
		h = newTestHost(t, cfg)
		if _, err := h.Deploy(context.Background(), "m", wasm); err != nil {
			t.Errorf("%s: at the limit: %v", tc.field, err)
		}
	}
}

func moduleFlagOf(field string) string { return limitflags.Flag("ModuleLimits." + field) }

// cacheState is the compiled-module cache's counters.
type cacheState struct {
	entries             int
	bytes               int64
	compiles, evictions uint64
}

func (h *testHost) metric(t *testing.T) cacheState {
	t.Helper()
	st := h.modules.Stats()
	return cacheState{entries: st.Entries, bytes: st.Bytes, compiles: st.Compiles, evictions: st.Evictions}
}

func (h *testHost) cached(hash string) bool { return h.modules.Cached(hash) }

// TestCompiledCacheKeepsModulesInUse: under a cache bound every module
// goes over, the module of a run being driven stays compiled while other
// modules come and go (the run's step body is held until they are
// deployed): another run instantiates it from the cache, without
// compiling it again. The module is evicted once the runs end, and a new
// run of it compiles it again.
func TestCompiledCacheKeepsModulesInUse(t *testing.T) {
	ctx := context.Background()
	h := newTestHost(t, Config{MaxCompiledBytes: 1})
	inBody, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.hooks.onBody = func(run, key string) {
		if run == "held" {
			once.Do(func() { close(inBody) })
			<-release
		}
	}
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/server"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(ctx, "srv", wasm)
	if err != nil {
		t.Fatal(err)
	}
	if h.cached(m.Hash) {
		t.Fatal("a module no one uses stays cached over the bound")
	}
	r, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "echo", Input: []byte(`"held"`), ID: "held"})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		run store.Run
		err error
	}
	done := make(chan result, 1)
	go func() {
		run, err := h.Drive(ctx, r.ID, DriveOptions{})
		done <- result{run, err}
	}()
	select {
	case <-inBody:
	case res := <-done:
		t.Fatalf("the run ended before its step body: %+v, %v", res.run, res.err)
	}
	for i := range 3 {
		if _, err := h.Deploy(ctx, "", wasmtest.Variant(wasm, i, 8)); err != nil {
			t.Fatal(err)
		}
		if !h.cached(m.Hash) {
			t.Fatalf("the module of a running run was evicted by deploy %d", i)
		}
	}
	held := h.metric(t)
	if got := h.runToEnd(t, m, "echo", `"meanwhile"`, "meanwhile"); got.Status != store.RunCompleted || string(got.Result) != `"meanwhile"` {
		t.Fatalf("a run of the module in use: %+v", got)
	}
	if m := h.metric(t); m.compiles != held.compiles {
		t.Errorf("a run of the module in use compiled it again (%d -> %d compiles)", held.compiles, m.compiles)
	}
	close(release)
	res := <-done
	if res.err != nil || res.run.Status != store.RunCompleted || string(res.run.Result) != `"held"` {
		t.Fatalf("the held run: %+v, %v", res.run, res.err)
	}
	before := h.metric(t)
	if h.cached(m.Hash) || before.entries != 0 || before.evictions < 1 {
		t.Fatalf("after the run ended: %+v, module cached %v; want it evicted", before, h.cached(m.Hash))
	}
	if got := h.runToEnd(t, m, "echo", `"again"`, "again"); got.Status != store.RunCompleted || string(got.Result) != `"again"` {
		t.Fatalf("a new run of the evicted module: %+v", got)
	}
	if after := h.metric(t); after.compiles != before.compiles+1 {
		t.Errorf("compiles %d -> %d; want one more", before.compiles, after.compiles)
	}
}

// TestCompileDeadlineAndCancel: a deploy whose compilation passes
// Config.CompileTimeout fails with the limit named, one whose context
// ends fails with its cause, both at once; the compilations they leave
// stop soon after (Close waits for them).
func TestCompileDeadlineAndCancel(t *testing.T) {
	slow := func(name string) []byte {
		return wasmtest.Shaped(wasmtest.Shape{Workflow: name, Functions: 100, Branches: 2000})
	}
	h := newTestHost(t, Config{CompileTimeout: 300 * time.Millisecond, MaxConcurrentCompiles: 2, CacheDir: t.TempDir()})
	// Built before the clocks start: under the race detector building one
	// takes longer than the 200 ms after which the second deploy's
	// context ends.
	a, b := slow("a"), slow("b")
	start := time.Now()
	_, err := h.Deploy(context.Background(), "slow", a)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "CompileTimeout" ||
		err.Error() != "module slow rejected: compiling the module took longer than 300ms (limit Config.CompileTimeout = 300ms; --compile-timeout)" {
		t.Errorf("past the deadline: %v", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(200*time.Millisecond, func() { cancel(errors.New("the client left")) })
	_, err = h.Deploy(ctx, "left", b)
	if err == nil || err.Error() != "compiling module left stopped: the client left" {
		t.Errorf("canceled: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the two deploys took %v", took)
	}
	// wazero stops a compilation between functions. wasmtime cannot stop
	// one: it runs to its end on wasmtime's threads, holding its compile
	// slot, which Close waits for (docs/engines.md); these two take 3-5 s
	// each on 2 cores.
	bound := 5 * time.Second
	if testEngine == EngineWasmtime {
		bound = 30 * time.Second
	}
	closed := make(chan struct{})
	go func() {
		h.Close(context.Background())
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(bound):
		t.Fatalf("Close still waits for the stopped compilations after %s", bound)
	}
	if n := h.modules.Stats().Running; n != 0 {
		t.Errorf("%d compilations still hold a slot", n)
	}
}
