package main

// Tests of hostile and heavy uploads against a real `skein serve`
// (issue 16, items 3 and 4 and the memory of concurrent uploads): a
// module that would compile for hours, compilations past their deadline
// or abandoned by their client, rejected modules, many module variants,
// many large uploads at once, and the quota on stored modules. Memory and
// CPU are read from the server process's /proc entries.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/internal/testing/wasmtest"
)

// upload posts a module to the server, bounded by timeout, and returns
// the answer and how long it took.
func (s *skeinServer) upload(t *testing.T, ctx context.Context, wasm []byte, timeout time.Duration) (reply, time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/modules", bytes.NewReader(wasm))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/wasm")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, time.Since(start), err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: data}, time.Since(start), err
}

// procStatus returns a field of /proc/PID/status in bytes (VmRSS, VmHWM).
func (s *skeinServer) procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil || len(f) != 2 || f[1] != "kB" {
				t.Fatalf("/proc status line %q", line)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, s.cmd.Process.Pid)
	return 0
}

// cpu returns the CPU time the server process has used (user + system).
func (s *skeinServer) cpu(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name (in parentheses): utime and stime
	// are the 12th and 13th, in clock ticks of 1/100 s.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// metrics scrapes the server's /metrics into series -> value.
func (s *skeinServer) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := httpClient.Get(s.url + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d, %v", resp.StatusCode, err)
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// TestServeDeployNestingBomb: a 3 MB module of 1,000,000 nested blocks
// (which wazero would compile for over an hour) is refused at once with
// 422 and the limit's name, by the API and by `skein deploy`, and the
// server goes on deploying and running other modules.
func TestServeDeployNestingBomb(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "bomb.db"), nil)
	bomb := wasmtest.Shaped(wasmtest.Shape{Nesting: 1_000_000})
	const msg = "module (unnamed) rejected: function 4 nests blocks 1000000 deep (limit Config.ModuleLimits.MaxNesting = 4096; --max-module-nesting)"
	cpu0 := s.cpu(t)
	r, took, err := s.upload(t, context.Background(), bomb, 20*time.Second)
	if err != nil {
		t.Fatalf("upload of the nesting bomb: no answer after %v: %v (server CPU since: %v)", took.Round(time.Millisecond), err, s.cpu(t)-cpu0)
	}
	want422(t, r, msg)
	if took > 5*time.Second {
		t.Errorf("the answer took %v", took)
	}
	file := filepath.Join(t.TempDir(), "bomb.wasm")
	if err := os.WriteFile(file, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, s.cli(t, nil, "deploy", file), exitFailed,
		"function 4 nests blocks 1000000 deep (limit Config.ModuleLimits.MaxNesting = 4096; --max-module-nesting)", "HTTP 422 module_limit")
	hash := deployServerModule(t, s, nil)
	run := s.call(t, "POST", "/v1/runs", "", map[string]any{"module": hash, "workflow": "echo", "input": "after the bomb"})
	want(t, "start echo", run, 201, "")
	id := decodeJSON[apiRun](t, "start", run.body).ID
	if got := s.awaitStatus(t, id, "", "completed"); string(got.Result) != `"after the bomb"` {
		t.Errorf("echo run: %+v", got)
	}
	s.stop(t)
}

func want422(t *testing.T, r reply, msg string) {
	t.Helper()
	if r.status != http.StatusUnprocessableEntity || r.errCode() != "module_limit" || r.errMessage() != msg {
		t.Errorf("got %s\nwant HTTP 422 module_limit %q", r, msg)
	}
}

// slowModule compiles for several seconds under any structure limit: 100
// functions of 2,000 branches each (about 0.15 s apiece here).
func slowModule(name string) []byte {
	return wasmtest.Shaped(wasmtest.Shape{Workflow: name, Functions: 100, Branches: 2000})
}

// TestServeCompileDeadline: a module that compiles for longer than
// --compile-timeout is refused with 422 naming the limit once the
// deadline passes, and the compilation stops then: the server's CPU use
// after the answer is bounded by the functions being compiled at that
// moment, not by the rest of the module.
func TestServeCompileDeadline(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "deadline.db"), nil, "--cache-dir", "", "--compile-timeout", "1s")
	r, took, err := s.upload(t, context.Background(), slowModule("slow"), 25*time.Second)
	if err != nil {
		t.Fatalf("no answer after %v: %v", took, err)
	}
	want422(t, r, "module (unnamed) rejected: compiling the module took longer than 1s (limit Config.CompileTimeout = 1s; --compile-timeout)")
	if took > 4*time.Second {
		t.Errorf("the answer took %v; want about the 1s deadline", took)
	}
	checkCompileStops(t, s)
	s.stop(t)
}

// checkCompileStops checks that no compilation runs on the server within
// 3s and that it then stays idle: under 0.5s of CPU in 2s.
func checkCompileStops(t *testing.T, s *skeinServer) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		running, ok := s.metrics(t)["skein_module_compiles_running"]
		if !ok {
			t.Errorf("the server's /metrics lack skein_module_compiles_running")
			time.Sleep(time.Until(deadline))
			break
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a compilation still runs 3s after its deploy ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cpu0 := s.cpu(t)
	time.Sleep(2 * time.Second)
	if used := s.cpu(t) - cpu0; used > 500*time.Millisecond {
		t.Errorf("the server used %v of CPU in the 2s after the compilation stopped", used)
	}
}

// TestServeCompileStopsWhenClientLeaves: a client that goes away in the
// middle of a slow deploy stops its compilation.
func TestServeCompileStopsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "leave.db"), nil, "--cache-dir", "")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	if r, took, err := s.upload(t, ctx, slowModule("left"), 25*time.Second); err == nil {
		t.Fatalf("the upload was answered after %v (%s); want it still compiling when the client left", took, r)
	}
	checkCompileStops(t, s)
	s.stop(t)
}

// TestServeCompileConcurrency: with --max-concurrent-compiles 1, three
// slow deploys at once compile one at a time.
func TestServeCompileConcurrency(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "conc.db"), nil, "--cache-dir", "",
		"--compile-timeout", "2s", "--max-concurrent-compiles", "1", "--max-concurrent-deploys", "3")
	done := make(chan reply, 3)
	for i := range 3 {
		go func() {
			r, _, err := s.upload(t, context.Background(), slowModule(fmt.Sprintf("c%d", i)), 25*time.Second)
			if err != nil {
				r = reply{body: []byte(err.Error())}
			}
			done <- r
		}()
	}
	maxRunning, maxWaiting := 0.0, 0.0
	for n := 0; n < 3; {
		select {
		case r := <-done:
			n++
			want422(t, r, "module (unnamed) rejected: compiling the module took longer than 2s (limit Config.CompileTimeout = 2s; --compile-timeout)")
		case <-time.After(50 * time.Millisecond):
			m := s.metrics(t)
			maxRunning = max(maxRunning, m["skein_module_compiles_running"])
			maxWaiting = max(maxWaiting, m["skein_module_compiles_waiting"])
		}
	}
	if maxRunning != 1 || maxWaiting < 1 {
		t.Errorf("compilations running at most %v at once, waiting at most %v; want 1 and at least 1", maxRunning, maxWaiting)
	}
	s.stop(t)
}

// TestServeRejectedModulesDoNotLeak: modules rejected after they
// compiled (at the describe step) leave the compiled-module cache at
// once, and the server's memory does not grow with each of them.
func TestServeRejectedModulesDoNotLeak(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "uploads hundreds of rejected modules and measures the server's memory (about 30 s)")
	base, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/unregistered"))
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(t.TempDir(), "rejected.db"), nil, "--cache-dir", "")
	const warm, n = 4, 24
	var rss0 int64
	for i := range n {
		if i == warm {
			rss0 = s.procStatus(t, "VmRSS")
		}
		r, _, err := s.upload(t, context.Background(), wasmtest.Variant(base, i, 16), 25*time.Second)
		if err != nil || r.status != 400 || !strings.Contains(r.errMessage(), "it registers no workflows") {
			t.Fatalf("upload %d: %s %v; want 400 registers no workflows", i, r, err)
		}
	}
	growth := s.procStatus(t, "VmRSS") - rss0
	m := s.metrics(t)
	t.Logf("%d rejected modules of %d bytes: RSS grew %d MiB over the last %d; metrics %v", n, len(base), growth>>20, n-warm, cacheMetrics(m))
	if perUpload := growth / (n - warm); perUpload > rejectedMargin {
		t.Errorf("the server's RSS grew by %d KiB per rejected module; want at most %d KiB", perUpload>>10, rejectedMargin>>10)
	}
	if m["skein_compiled_modules"] != 0 || m["skein_compiled_module_bytes"] != 0 || m["skein_compiled_module_discards_total"] != n {
		t.Errorf("compiled-module cache after %d rejected modules: %v; want empty, %d discards", n, cacheMetrics(m), n)
	}
	s.stop(t)
}

// rejectedMargin is the RSS growth per rejected upload the test allows
// (docs/limits.md): the garbage of a compilation is reused by the next,
// so the growth is noise from the heap's pacing.
const rejectedMargin = 3 << 20

func cacheMetrics(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "skein_compiled_module") || strings.HasPrefix(k, "skein_module_compiles") {
			out[k] = v
		}
	}
	return out
}

// TestServeCompiledCacheBound: the compiled-module cache stays within
// --max-compiled-bytes however many module variants are deployed and
// run, evicting the least recently used; a run of an evicted module
// compiles it again and completes; the server's memory stays bounded.
func TestServeCompiledCacheBound(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "compiles many large modules past the cache bound (about 20 s)")
	base, err := os.ReadFile(wasmbuild.Build(t, serverWorkflows))
	if err != nil {
		t.Fatal(err)
	}
	const bound = 64 << 20
	s := startServer(t, filepath.Join(t.TempDir(), "cache.db"), nil, "--cache-dir", "", "--max-compiled-bytes", strconv.Itoa(bound))
	const n = 10
	hashes := make([]string, n)
	var rss2 int64
	for i := range n {
		if i == 2 {
			rss2 = s.procStatus(t, "VmRSS")
		}
		r, _, err := s.upload(t, context.Background(), wasmtest.Variant(base, i, 16), 60*time.Second)
		if err != nil || r.status != 201 {
			t.Fatalf("deploy variant %d: %s %v", i, r, err)
		}
		hashes[i] = decodeJSON[apiModule](t, "deploy", r.body).Hash
		echoRun(t, s, hashes[i], i)
		if m := s.metrics(t); m["skein_compiled_module_bytes"] > bound || m["skein_compiled_module_bytes"] == 0 {
			t.Fatalf("after variant %d: %v; want the cache within %d bytes", i, cacheMetrics(m), bound)
		}
	}
	echoRun(t, s, hashes[0], n) // evicted long ago: compiled again
	m := s.metrics(t)
	growth := s.procStatus(t, "VmRSS") - rss2
	t.Logf("%d variants of %d bytes: %v; RSS grew %d MiB after the second", n, len(base), cacheMetrics(m), growth>>20)
	if m["skein_compiled_module_evictions_total"] < n-3 || m["skein_compiled_modules"] > 3 || m["skein_module_compiles_total"] != n+1 {
		t.Errorf("cache after %d variants and a run of the first: %v; want at least %d evictions, at most 3 modules, %d compiles",
			n, cacheMetrics(m), n-3, n+1)
	}
	if growth > cacheMargin {
		t.Errorf("the server's RSS grew by %d MiB over %d variants; want at most %d MiB", growth>>20, n-2, cacheMargin>>20)
	}
	s.stop(t)
}

// cacheMargin bounds the RSS growth of TestServeCompiledCacheBound past
// its second variant: the cache's 64 MiB bound plus the Go heap's slack
// (docs/limits.md).
const cacheMargin = 128 << 20

// echoRun starts an echo run of module hash and waits for its result.
func echoRun(t *testing.T, s *skeinServer, hash string, i int) {
	t.Helper()
	r := s.call(t, "POST", "/v1/runs", "", map[string]any{"module": hash, "workflow": "echo", "input": i})
	want(t, "start echo", r, 201, "")
	id := decodeJSON[apiRun](t, "start", r.body).ID
	if got := s.awaitStatus(t, id, "", "completed"); string(got.Result) != strconv.Itoa(i) {
		t.Errorf("echo run of %s: %+v", hash[:12], got)
	}
}

// TestServeModuleQuota: an upload over --max-module-bytes gets 413 and a
// deploy past --max-stored-module-bytes gets 507, both naming their
// limit, by the API and by `skein deploy`; a module already stored still
// deploys.
func TestServeModuleQuota(t *testing.T) {
	t.Parallel()
	base, err := os.ReadFile(wasmbuild.Build(t, serverWorkflows))
	if err != nil {
		t.Fatal(err)
	}
	// Both odd, so that the messages write them in bytes alone (a limit
	// that is a whole number of KiB or MiB also gets that unit).
	quota := (2*len(base) + len(base)/2) | 1
	maxModule := (len(base) + 1000) | 1
	s := startServer(t, filepath.Join(t.TempDir(), "quota.db"), nil,
		"--max-stored-module-bytes", strconv.Itoa(quota), "--max-module-bytes", strconv.Itoa(maxModule))
	big := wasmtest.WithCustomSection(base, "pad", 2000)
	r, _, err := s.upload(t, context.Background(), big, 30*time.Second)
	msg := fmt.Sprintf("module rejected: the module is %d bytes (limit Config.MaxModuleBytes = %d bytes; --max-module-bytes)", len(big), maxModule)
	if err != nil || r.status != 413 || r.errCode() != "too_large" || r.errMessage() != msg {
		t.Errorf("upload over --max-module-bytes: %s %v; want 413 too_large %q", r, err, msg)
	}
	// Without a Content-Length, the limit stops the body as it arrives.
	req, err := http.NewRequest("POST", s.url+"/v1/modules", io.MultiReader(bytes.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/wasm")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r = reply{status: resp.StatusCode, body: body}
	msg = fmt.Sprintf("module rejected: the module is more than %d bytes (limit Config.MaxModuleBytes = %d bytes; --max-module-bytes)", maxModule, maxModule)
	if r.status != 413 || r.errCode() != "too_large" || r.errMessage() != msg {
		t.Errorf("chunked upload over --max-module-bytes: %s; want 413 too_large %q", r, msg)
	}
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		f := filepath.Join(dir, fmt.Sprintf("v%d.wasm", i))
		if err := os.WriteFile(f, wasmtest.Variant(base, i, 16), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	wantExit(t, s.cli(t, nil, "deploy", files[0]), 0, "deployed")
	wantExit(t, s.cli(t, nil, "deploy", files[1]), 0, "deployed")
	size := len(wasmtest.Variant(base, 0, 16)) // every variant's
	want := fmt.Sprintf("module v2 rejected: storing the module's %d bytes would bring the modules stored to %d bytes (limit Config.MaxStoredModuleBytes = %d bytes; --max-stored-module-bytes)",
		size, 3*size, quota)
	wantExit(t, s.cli(t, nil, "deploy", files[2]), exitFailed, want, "HTTP 507 quota_exceeded")
	wantExit(t, s.cli(t, nil, "deploy", files[0]), 0, "already deployed")
	s.stop(t)
}

// TestServeConcurrentLargeUploads: 20 uploads of 60 MiB modules at once
// (each a valid module padded with a custom section) all deploy, and the
// server's peak RSS stays under largeUploadsPeak: uploads are spooled to
// disk and at most --max-concurrent-deploys (2) of them are in memory at
// once. Its RSS after they are done stays under largeUploadsAfter: the
// compiled-module cache's bound (256 MiB here) and the Go heap's slack.
func TestServeConcurrentLargeUploads(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "uploads large modules concurrently and bounds the server's memory (about 120 s)")
	base, err := os.ReadFile(wasmbuild.Build(t, serverWorkflows))
	if err != nil {
		t.Fatal(err)
	}
	const n, size = 20, 60 << 20
	s := startServer(t, filepath.Join(t.TempDir(), "large.db"), nil, "--cache-dir", "", "--max-compiled-bytes", strconv.Itoa(256<<20))
	rss0 := s.procStatus(t, "VmRSS")
	done := make(chan error, n)
	for i := range n {
		go func() {
			wasm := wasmtest.Variant(base, i, size-len(base)-32)
			r, took, err := s.upload(t, context.Background(), wasm, 5*time.Minute)
			if err == nil && r.status != 201 {
				err = fmt.Errorf("%s", r)
			}
			if err != nil {
				err = fmt.Errorf("upload %d (%d bytes, %v): %w", i, len(wasm), took.Round(time.Millisecond), err)
			}
			done <- err
		}()
	}
	for range n {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	peak := s.procStatus(t, "VmHWM")
	time.Sleep(5 * time.Second)
	after := s.procStatus(t, "VmRSS")
	t.Logf("%d concurrent uploads of %d MiB: RSS before %d MiB, peak %d MiB, 5s after %d MiB; %v",
		n, size>>20, rss0>>20, peak>>20, after>>20, cacheMetrics(s.metrics(t)))
	if peak > largeUploadsPeak {
		t.Errorf("peak RSS %d MiB; want at most %d MiB", peak>>20, largeUploadsPeak>>20)
	}
	if after > largeUploadsAfter {
		t.Errorf("RSS 5s after the uploads %d MiB; want at most %d MiB", after>>20, largeUploadsAfter>>20)
	}
	s.stop(t)
}

// The bounds of TestServeConcurrentLargeUploads (docs/limits.md).
const (
	largeUploadsPeak  = 1024 << 20
	largeUploadsAfter = 512 << 20
)

// TestRunModuleLimitFlags: every structure limit's flag of `skein run`
// reaches the host, and a module one over it is refused before it runs,
// with the limit named.
func TestRunModuleLimitFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "limits.db")
	for i, tc := range []struct {
		shape wasmtest.Shape
		flag  string
		value int // the module's measure; the flag is set one below
		want  string
	}{
		{wasmtest.Shape{Nesting: 11}, "nesting", 11, "function 4 nests blocks 11 deep (limit Config.ModuleLimits.MaxNesting = 10"},
		{wasmtest.Shape{Functions: 1, Branches: 6}, "control-ops", 12, "function 4 has 12 control instructions (limit Config.ModuleLimits.MaxControlOps = 11"},
		{wasmtest.Shape{Functions: 1, BodyOps: 100}, "function-bytes", 704, "function 4 is 704 bytes (limit Config.ModuleLimits.MaxFunctionBytes = 703"},
		{wasmtest.Shape{Functions: 5}, "functions", 9, "the module has 9 functions (limit Config.ModuleLimits.MaxFunctions = 8"},
		{wasmtest.Shape{Functions: 1, Locals: 20}, "locals", 20, "function 4 declares 20 locals (limit Config.ModuleLimits.MaxLocals = 19"},
		{wasmtest.Shape{Types: 3}, "types", 7, "the module declares 7 function types (limit Config.ModuleLimits.MaxTypes = 6"},
		{wasmtest.Shape{Types: 1, TypeValues: 9}, "type-values", 9, "function type 4 has 9 parameters and results (limit Config.ModuleLimits.MaxTypeValues = 8"},
		{wasmtest.Shape{}, "imports", 3, "the module has 3 imports (limit Config.ModuleLimits.MaxImports = 2"},
		{wasmtest.Shape{}, "exports", 2, "the module has 2 exports (limit Config.ModuleLimits.MaxExports = 1"},
		{wasmtest.Shape{Globals: 4}, "globals", 4, "the module has 4 globals (limit Config.ModuleLimits.MaxGlobals = 3"},
		{wasmtest.Shape{TableMin: 100}, "table-elements", 100, "a table of the module can reach 100 elements (limit Config.ModuleLimits.MaxTableElements = 99"},
		{wasmtest.Shape{DataSegments: 4}, "data-segments", 5, "the module has 5 data segments (limit Config.ModuleLimits.MaxDataSegments = 4"},
		{wasmtest.Shape{ElementSegments: 3}, "element-segments", 3, "the module has 3 element segments (limit Config.ModuleLimits.MaxElementSegments = 2"},
	} {
		file := filepath.Join(dir, fmt.Sprintf("m%d.wasm", i))
		if err := os.WriteFile(file, wasmtest.Shaped(tc.shape), 0o644); err != nil {
			t.Fatal(err)
		}
		flag := "--max-module-" + tc.flag
		r := skein(t, dir, "run", file, "--db", db, flag, strconv.Itoa(tc.value-1))
		wantExit(t, r, exitFailed, tc.want+"; "+flag+")")
	}
	file := filepath.Join(dir, "m0.wasm")
	wantExit(t, skein(t, dir, "run", file, "--db", db, "--max-stored-module-bytes", "100"), exitFailed,
		"(limit Config.MaxStoredModuleBytes = 100 bytes; --max-stored-module-bytes)")
}

// TestServeDeployCrashingModules: modules of a few bytes that crash
// wazero 1.12 get a 400 naming what is wrong, and the server goes on: 16
// bytes announcing 238 million imports (wazero allocates 26 GB for them
// and the process dies of "out of memory"), and 30 bytes calling a
// function whose type index names no type (wazero panics).
func TestServeDeployCrashingModules(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "crash.db"), nil)
	for _, tc := range []struct {
		wasm []byte
		msg  string
	}{
		{[]byte("\x00asm\x01\x00\x00\x00\x02d\xb0\x90\xec\xf1\x000"),
			"module (unnamed) rejected: invalid WebAssembly: malformed section list: at byte 10: unexpected end: 100 bytes announced, 6 left"},
		{[]byte{0, 'a', 's', 'm', 1, 0, 0, 0,
			1, 4, 1, 0x60, 0, 0, // one type () -> ()
			3, 3, 2, 0, 7, // two functions: type 0, type 7
			10, 9, 2, 4, 0, 0x10, 1, 0x0b, 2, 0, 0x0b}, // function 0 calls function 1
			"module (unnamed) rejected: invalid WebAssembly: malformed function section, function 1: at byte 19: type index 7, but the module declares 1 types"},
	} {
		r, _, err := s.upload(t, context.Background(), tc.wasm, 20*time.Second)
		if err != nil || r.status != 400 || r.errCode() != "invalid_module" || r.errMessage() != tc.msg {
			t.Errorf("got %s %v\nwant 400 invalid_module %q", r, err, tc.msg)
		}
	}
	deployServerModule(t, s, nil)
	s.stop(t)
}
