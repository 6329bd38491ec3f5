package main

// End-to-end tests of `skein serve` and the client commands: each test
// starts the real skein binary (built by TestMain) as a server on a free
// port of 127.0.0.1, talks to it over real HTTP, with curl-like requests
// and with the client commands, and stops it with SIGTERM.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/internal/testing/wasmtest"
)

// serverWorkflows is the package of the workflows these tests run.
const serverWorkflows = "./testdata/workflows/server"

// runWait bounds how long a test waits for a run to reach a state.
const runWait = 20 * time.Second

// lockedBuffer is a bytes.Buffer safe for a writer and readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// skeinServer is a running `skein serve` process.
type skeinServer struct {
	url    string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's error, once exited is closed
}

// startServer starts `skein serve --db db --addr 127.0.0.1:0 args...`
// with env added to the environment, and returns once it printed its
// address. The process is killed at the end of the test if still alive.
func startServer(t *testing.T, db string, env []string, args ...string) *skeinServer {
	t.Helper()
	return startServe(t, []string{"--db", db}, env, args...)
}

// startServe starts `skein serve` on the store the flags name (--db or
// --store); see startServer.
func startServe(t *testing.T, storeFlags, env []string, args ...string) *skeinServer {
	t.Helper()
	return startServeBin(t, skeinBin, storeFlags, env, args...)
}

// startServeBin is startServe with another skein binary.
func startServeBin(t *testing.T, bin string, storeFlags, env []string, args ...string) *skeinServer {
	t.Helper()
	all := append(append([]string{"serve"}, storeFlags...), "--addr", "127.0.0.1:0")
	if c := testcache.Shared(); c != "" {
		all = append(all, "--cache-dir", c)
	}
	cmd := exec.Command(bin, append(all, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), env...)
	s := startListener(t, cmd, "skein serve: listening on ", "skein serve")
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") {
		t.Fatalf("skein serve listens on %s; want 127.0.0.1", s.url)
	}
	return s
}

// startListener starts cmd, a server that prints prefix and its URL as
// its first line on stdout, and returns once it did. The process is
// killed at the end of the test if still alive; its stderr is logged if
// the test failed.
func startListener(t *testing.T, cmd *exec.Cmd, prefix, name string) *skeinServer {
	t.Helper()
	s := &skeinServer{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		br := bufio.NewReader(out)
		line, _ := br.ReadString('\n')
		first <- line
		io.Copy(io.Discard, br)
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, s.stderr.String())
		}
	})
	select {
	case line := <-first:
		if !strings.HasPrefix(line, prefix) {
			<-s.exited
			t.Fatalf("%s: first line %q, want %q...; exit: %v\nstderr:\n%s", name, line, prefix, s.err, s.stderr.String())
		}
		s.url = strings.TrimSpace(strings.TrimPrefix(line, prefix))
	case <-time.After(cmdTimeout):
		t.Fatalf("%s did not print its address within %v\nstderr:\n%s", name, cmdTimeout, s.stderr.String())
	}
	return s
}

// kill SIGKILLs the process, unless it has exited, and waits for it.
func (s *skeinServer) kill() {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.exited
}

// cleanEnv is the environment without SKEIN_SERVER and SKEIN_TOKEN, so a
// developer's settings do not leak into the tests.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "SKEIN_SERVER=") || strings.HasPrefix(kv, "SKEIN_TOKEN=")
	})
}

// stop sends SIGTERM and waits for a clean exit.
func (s *skeinServer) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(cmdTimeout):
		s.cmd.Process.Kill()
		<-s.exited
		t.Fatalf("skein serve did not exit within %v of SIGTERM\nstderr:\n%s", cmdTimeout, s.stderr.String())
	}
	if s.err != nil {
		t.Fatalf("skein serve exited with %v after SIGTERM\nstderr:\n%s", s.err, s.stderr.String())
	}
	for _, w := range []string{"listening", "shutting down", "stopped"} {
		if !strings.Contains(s.stderr.String(), w) {
			t.Errorf("skein serve's log lacks %q\n%s", w, s.stderr.String())
		}
	}
}

// httpClient bounds every request of the tests.
var httpClient = &http.Client{Timeout: cmdTimeout}

// reply is one HTTP answer.
type reply struct {
	status int
	body   []byte
}

func (r reply) String() string { return fmt.Sprintf("HTTP %d %s", r.status, bytes.TrimSpace(r.body)) }

// errCode returns the code of an error answer, "" if it is not one.
func (r reply) errCode() string {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(r.body, &e) != nil {
		return ""
	}
	return e.Error.Code
}

func (r reply) errMessage() string {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	json.Unmarshal(r.body, &e)
	return e.Error.Message
}

// call sends one request. body is sent as is when it is []byte, else as
// JSON unless nil. token, if set, goes in the Authorization header.
func (s *skeinServer) call(t *testing.T, method, path, token string, body any) reply {
	t.Helper()
	return s.callNS(t, method, path, token, "", body)
}

// callNS is call in namespace ns (X-Skein-Namespace; "": none).
func (s *skeinServer) callNS(t *testing.T, method, path, token, ns string, body any) reply {
	t.Helper()
	var rd io.Reader
	ct, expect := "", false
	switch b := body.(type) {
	case nil:
		if method == "POST" { // a write without a body still says it is JSON, as the CLI's do
			ct = "application/json"
		}
	case []byte:
		rd, ct = bytes.NewReader(b), "application/wasm"
		expect = true
	case string:
		rd, ct = strings.NewReader(b), "application/json"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd, ct = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ns != "" {
		req.Header.Set("X-Skein-Namespace", ns)
	}
	if expect {
		// As skein deploy does: a server that refuses the upload answers
		// before the body is sent.
		req.Header.Set("Expect", "100-continue")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	return reply{status: resp.StatusCode, body: data}
}

// want checks the status of r and, for an error answer, its code.
func want(t *testing.T, what string, r reply, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: %s; want HTTP %d", what, r, status)
		return
	}
	if code != "" && r.errCode() != code {
		t.Errorf("%s: %s; want error code %q", what, r, code)
	}
}

// apiModule is the module document of the API, as package client decodes it.
type apiModule = client.Module

// apiRun mirrors the run document of the API with its times as the
// server writes them (client.Run parses them), which the tests compare.
type apiRun struct {
	ID           string          `json:"id"`
	Module       string          `json:"module"`
	Workflow     string          `json:"workflow"`
	Status       string          `json:"status"`
	Input        json.RawMessage `json:"input"`
	Result       json.RawMessage `json:"result"`
	Error        string          `json:"error"`
	Parent       string          `json:"parent"`
	ParentClose  string          `json:"parent_close"`
	Abandoned    bool            `json:"abandoned"`
	CancelReason string          `json:"cancel_reason"`
	// The chain of a run that continued as new (omitted otherwise).
	ContinuedFrom string        `json:"continued_from"`
	ContinuedAs   string        `json:"continued_as"`
	CreatedAt     string        `json:"created_at"`
	UpdatedAt     string        `json:"updated_at"`
	Worker        string        `json:"worker"`       // omitted when no worker holds the run
	LeaseExpiry   string        `json:"lease_expiry"` // likewise
	Paused        *client.Pause `json:"paused"`       // omitted unless paused
	Attributes    any           `json:"attributes"`   // omitted when it has none
	// The links of a reset (omitted otherwise).
	ResetTo   string `json:"reset_to"`
	ResetFrom string `json:"reset_from"`
	ResetKey  string `json:"reset_key"`
}

func decodeJSON[T any](t *testing.T, what string, data []byte) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, data)
	}
	return v
}

func (s *skeinServer) getRun(t *testing.T, id, token string) apiRun {
	t.Helper()
	r := s.call(t, "GET", "/v1/runs/"+id, token, nil)
	if r.status != 200 {
		t.Fatalf("GET run %s: %s", id, r)
	}
	return decodeJSON[apiRun](t, "run "+id, r.body)
}

// awaitStatus polls the run until its status is one of want, and fails
// the test after runWait.
func (s *skeinServer) awaitStatus(t *testing.T, id, token string, want ...string) apiRun {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for {
		run := s.getRun(t, id, token)
		if slices.Contains(want, run.Status) {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s after %v; want %s (error %q)", id, run.Status, runWait, strings.Join(want, " or "), run.Error)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outcomes returns the outcome view of a run.
func (s *skeinServer) outcomes(t *testing.T, id, token string) runJSON {
	t.Helper()
	r := s.call(t, "GET", "/v1/runs/"+id+"/outcomes", token, nil)
	if r.status != 200 {
		t.Fatalf("GET outcomes of %s: %s", id, r)
	}
	return decodeJSON[runJSON](t, "outcomes of "+id, r.body)
}

// awaitOutcome polls the run until it has an outcome at key.
func (s *skeinServer) awaitOutcome(t *testing.T, id, key string) runJSON {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for {
		v := s.outcomes(t, id, "")
		if slices.Contains(v.keys(), key) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s (%s) has no outcome %s after %v: %q", id, v.Status, key, runWait, v.keys())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cli runs a client command against the server, with env added.
func (s *skeinServer) cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return skeinEnv(t, env, append(args, "--server", s.url)...)
}

// skeinEnv is skein with env added to a clean environment.
func skeinEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, skeinBin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		t.Fatalf("skein %s: did not finish within %v\n%s", strings.Join(args, " "), cmdTimeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("skein %s: %v", strings.Join(args, " "), err)
	}
	return r
}

func wantExit(t *testing.T, r result, code int, texts ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d; want %d\n%s", r.code, code, r)
	}
	for _, w := range texts {
		if !strings.Contains(r.stdout+r.stderr, w) {
			t.Errorf("output lacks %q\n%s", w, r)
		}
	}
	noHostPanic(t, r)
}

// deployServerModule deploys the test workflows as "srv" with the CLI and
// returns the module's hash.
func deployServerModule(t *testing.T, s *skeinServer, env []string) string {
	t.Helper()
	wasm := wasmbuild.Build(t, serverWorkflows)
	r := s.cli(t, env, "deploy", wasm, "--name", "srv", "--json")
	wantExit(t, r, 0)
	m := decodeJSON[apiModule](t, "deploy --json", []byte(r.stdout))
	wantWfs := []string{"busy", "chain", "child", "echo", "parent", "sleeper", "waiter"}
	if m.Name != "srv" || len(m.Hash) != 64 || m.ABIVersion != 1 || !slices.Equal(m.Workflows, wantWfs) {
		t.Fatalf("deployed module %+v; want name srv, a sha256, ABI 1, workflows %q", m, wantWfs)
	}
	return m.Hash
}

// TestServerAPI drives one server through the whole API: modules, runs,
// outcomes, idempotent starts, promises, cancellation, child workflows,
// timeouts and the errors of each.
func TestServerAPI(t *testing.T) {
	t.Parallel()
	wasmPath := wasmbuild.Build(t, serverWorkflows)
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	const maxModule = 8 << 20
	if len(wasm) >= maxModule {
		t.Fatalf("the test module is %d bytes; raise maxModule", len(wasm))
	}
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--max-module-bytes", fmt.Sprint(maxModule))
	var hash string

	t.Run("deploy", func(t *testing.T) {
		hash = deployServerModule(t, s, nil)
		// The same bytes again: the same module, 200 instead of 201.
		r := s.call(t, "POST", "/v1/modules?name=srv", "", wasm)
		want(t, "second upload", r, 200, "")
		if m := decodeJSON[map[string]any](t, "second upload", r.body); m["hash"] != hash {
			t.Errorf("second upload: hash %v, want %s", m["hash"], hash)
		}
		r = s.call(t, "GET", "/v1/modules", "", nil)
		want(t, "list modules", r, 200, "")
		if !strings.Contains(string(r.body), hash) || strings.Contains(string(r.body), "bytes") {
			t.Errorf("module list: %s; want the module, without its bytes", r)
		}
		for _, ref := range []string{"srv", hash} {
			r = s.call(t, "GET", "/v1/modules/"+ref, "", nil)
			want(t, "get module "+ref, r, 200, "")
		}
		want(t, "unknown module", s.call(t, "GET", "/v1/modules/nope", "", nil), 404, "not_found")
	})

	t.Run("bad-uploads", func(t *testing.T) {
		messages := map[string]bool{}
		for _, c := range []struct {
			name   string
			body   []byte
			status int
			code   string
			text   string
		}{
			{"not-wasm", []byte("this is a text file, not a module\n"), 400, "invalid_module", "not a WebAssembly module"},
			{"empty", []byte{}, 400, "invalid_module", "empty"},
			{"plain-wasm", []byte("\x00asm\x01\x00\x00\x00"), 400, "invalid_module", "not a skein module"},
			{"abi-v2", wasmtest.TrapModule(2), 400, "invalid_module", "ABI v2"},
			{"too-large", bytes.Repeat([]byte{0}, maxModule+1), 413, "too_large", "limit"},
		} {
			r := s.call(t, "POST", "/v1/modules?name="+c.name, "", c.body)
			want(t, c.name, r, c.status, c.code)
			msg := r.errMessage()
			if !strings.Contains(msg, c.text) {
				t.Errorf("%s: message %q lacks %q", c.name, msg, c.text)
			}
			if messages[msg] {
				t.Errorf("%s: message %q is not its own", c.name, msg)
			}
			messages[msg] = true
		}
		// The client prints the server's reason.
		bad := filepath.Join(t.TempDir(), "bad.wasm")
		os.WriteFile(bad, []byte("not wasm"), 0o644)
		wantExit(t, s.cli(t, nil, "deploy", bad), exitFailed, "not a WebAssembly module", "400")
		// Nothing was stored.
		r := s.call(t, "GET", "/v1/modules", "", nil)
		if n := strings.Count(string(r.body), `"hash"`); n != 1 {
			t.Errorf("%d modules stored after the bad uploads; want 1\n%s", n, r)
		}
	})

	t.Run("start-wait-outcomes", func(t *testing.T) {
		r := s.cli(t, nil, "start", "srv", "--workflow", "echo", "--input", `{"a":[1,2]}`, "--id", "echo-1", "--json")
		wantExit(t, r, 0)
		run := decodeJSON[apiRun](t, "start --json", []byte(r.stdout))
		if run.ID != "echo-1" || run.Module != hash || run.Workflow != "echo" || !jsonEq(t, run.Input, `{"a":[1,2]}`) {
			t.Errorf("started run %+v", run)
		}
		w := s.cli(t, nil, "wait", "echo-1", "--timeout", "20s")
		wantExit(t, w, 0, "run echo-1: ")
		if !jsonEq(t, json.RawMessage(w.stdout), `{"a":[1,2]}`) {
			t.Errorf("wait printed %q; want the result", w.stdout)
		}
		run = s.getRun(t, "echo-1", "")
		if run.Status != "completed" || !jsonEq(t, run.Result, `{"a":[1,2]}`) || run.Error != "" || run.Parent != "" {
			t.Errorf("run %+v", run)
		}
		for _, ts := range []string{run.CreatedAt, run.UpdatedAt} {
			if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
				t.Errorf("time %q is not RFC 3339: %v", ts, err)
			}
		}
		v := s.outcomes(t, "echo-1", "")
		if v.Run != "echo-1" || v.Workflow != "echo" || v.Status != "completed" || len(v.Outcomes) != 1 {
			t.Fatalf("outcomes %+v", v)
		}
		if o := v.Outcomes[0]; o.Key != "1" || o.Function != "echo" || o.Status != "ok" || o.Attempts != 1 || !jsonEq(t, o.Value, `{"a":[1,2]}`) {
			t.Errorf("outcome %+v", o)
		}
		// inspect against the server prints the same view.
		in := s.cli(t, nil, "inspect", "echo-1", "--json")
		wantExit(t, in, 0)
		if iv := decodeRun(t, in); !jsonEq(t, mustJSON(t, iv), string(mustJSON(t, v))) {
			t.Errorf("inspect --json: %+v; the API says %+v", iv, v)
		}
		wantExit(t, s.cli(t, nil, "inspect", "echo-1"), 0, "KEY", "echo", "completed")
		wantExit(t, s.cli(t, nil, "status", "echo-1"), 0, "run echo-1 (echo): completed", `result: {"a":[1,2]}`)
		// wait --json prints the view.
		wj := s.cli(t, nil, "wait", "echo-1", "--json")
		wantExit(t, wj, 0)
		if wv := decodeRun(t, wj); wv.Status != "completed" || len(wv.Outcomes) != 1 {
			t.Errorf("wait --json: %+v", wv)
		}
	})

	t.Run("idempotent-start", func(t *testing.T) {
		req := map[string]any{"module": "srv", "workflow": "echo", "input": map[string]int{"x": 1}, "id": "idem-1"}
		r1 := s.call(t, "POST", "/v1/runs", "", req)
		want(t, "first start", r1, 201, "")
		// The same request, with its JSON spelled differently.
		r2 := s.call(t, "POST", "/v1/runs", "", `{"id":"idem-1","input":{ "x" : 1 },"workflow":"echo","module":"`+hash+`"}`)
		want(t, "same start again", r2, 200, "")
		a, b := decodeJSON[apiRun](t, "first", r1.body), decodeJSON[apiRun](t, "second", r2.body)
		if a.ID != b.ID || a.CreatedAt != b.CreatedAt {
			t.Errorf("the second start made another run: %+v vs %+v", a, b)
		}
		wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "echo", "--input", `{"x":1}`, "--id", "idem-1"), 0, "idem-1", "exists")
		for name, body := range map[string]map[string]any{
			"input":    {"module": "srv", "workflow": "echo", "input": map[string]int{"x": 2}, "id": "idem-1"},
			"workflow": {"module": "srv", "workflow": "sleeper", "input": map[string]int{"x": 1}, "id": "idem-1"},
		} {
			r := s.call(t, "POST", "/v1/runs", "", body)
			want(t, "conflicting "+name, r, 409, "conflict")
			if !strings.Contains(r.errMessage(), name) {
				t.Errorf("conflicting %s: message %q does not name the field", name, r.errMessage())
			}
		}
		wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "echo", "--input", `{"x":3}`, "--id", "idem-1"), exitFailed, "409", "input")
		s.awaitStatus(t, "idem-1", "", "completed")
	})

	t.Run("list-runs", func(t *testing.T) {
		var ids []string
		cursor := ""
		for page := 0; page < 10; page++ {
			r := s.call(t, "GET", "/v1/runs?limit=1&cursor="+cursor, "", nil)
			want(t, "list page", r, 200, "")
			l := decodeJSON[struct {
				Runs       []apiRun `json:"runs"`
				NextCursor string   `json:"next_cursor"`
			}](t, "run list", r.body)
			for _, run := range l.Runs {
				ids = append(ids, run.ID)
			}
			if cursor = l.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(ids, []string{"echo-1", "idem-1"}) {
			t.Errorf("paged run list: %q; want echo-1, idem-1", ids)
		}
		r := s.call(t, "GET", "/v1/runs?status=suspended", "", nil)
		want(t, "list suspended", r, 200, "")
		if strings.Contains(string(r.body), "echo-1") {
			t.Errorf("status filter ignored: %s", r)
		}
		want(t, "bad status", s.call(t, "GET", "/v1/runs?status=sleepy", "", nil), 400, "bad_request")
		want(t, "bad limit", s.call(t, "GET", "/v1/runs?limit=-1", "", nil), 400, "bad_request")
	})

	t.Run("sleeper", func(t *testing.T) {
		wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "sleeper", "--input", `{"ms":300}`, "--id", "sleep-1"), 0)
		w := s.cli(t, nil, "wait", "sleep-1", "--timeout", "20s")
		wantExit(t, w, 0)
		if strings.TrimSpace(w.stdout) != `"slept 300ms"` {
			t.Errorf("wait printed %q", w.stdout)
		}
		v := s.outcomes(t, "sleep-1", "")
		if !slices.Equal(v.keys(), []string{"1", "2"}) || v.Outcomes[0].Function != "sleep" || v.Outcomes[1].Function != "after-sleep" {
			t.Errorf("outcomes %+v", v.Outcomes)
		}
	})

	t.Run("promise", func(t *testing.T) {
		wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--input", "{}", "--id", "wait-1"), 0)
		v := s.awaitOutcome(t, "wait-1", "approve")
		if o := v.Outcomes[0]; o.Function != "promise" || o.Status != "pending" {
			t.Errorf("promise outcome %+v; want a pending promise", o)
		}
		s.awaitStatus(t, "wait-1", "", "suspended")
		// Bad settlements are refused before anything happens.
		want(t, "value and error", s.call(t, "POST", "/v1/promises/wait-1.approve", "", `{"value":"a","error":"b"}`), 400, "bad_request")
		want(t, "neither", s.call(t, "POST", "/v1/promises/wait-1.approve", "", `{}`), 400, "bad_request")
		want(t, "unknown field", s.call(t, "POST", "/v1/promises/wait-1.approve", "", `{"valu":"a"}`), 400, "bad_request")
		want(t, "unknown promise", s.call(t, "POST", "/v1/promises/wait-1.nope", "", `{"value":"a"}`), 404, "not_found")
		want(t, "unknown run", s.call(t, "POST", "/v1/promises/nope.approve", "", `{"value":"a"}`), 404, "not_found")
		wantExit(t, s.cli(t, nil, "resolve", "wait-1.approve", "--value", "yes"), exitUsage, "not valid JSON")

		wantExit(t, s.cli(t, nil, "resolve", "wait-1.approve", "--value", `"yes"`), 0, "wait-1.approve", "settled")
		// Exactly once: the second settlement is a conflict, whatever it says.
		want(t, "second settlement", s.call(t, "POST", "/v1/promises/wait-1.approve", "", `{"value":"no"}`), 409, "conflict")
		wantExit(t, s.cli(t, nil, "resolve", "wait-1.approve", "--error", "no"), exitFailed, "409")
		w := s.cli(t, nil, "wait", "wait-1", "--timeout", "20s")
		wantExit(t, w, 0)
		if strings.TrimSpace(w.stdout) != `"approved: yes"` {
			t.Errorf("wait printed %q; want \"approved: yes\"", w.stdout)
		}
		v = s.outcomes(t, "wait-1", "")
		if !slices.Equal(v.keys(), []string{"approve", "2"}) || !jsonEq(t, v.Outcomes[0].Value, `"yes"`) {
			t.Errorf("outcomes %+v", v.Outcomes)
		}

		// Settled with an error: the workflow gets it and fails. skein wait
		// --issued returns once the promise exists, and it can be settled.
		wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--input", "{}", "--id", "wait-2"), 0)
		wantExit(t, s.cli(t, nil, "wait", "wait-2", "--issued", "approve", "--timeout", "20s"), 0)
		if !slices.Contains(s.outcomes(t, "wait-2", "").keys(), "approve") {
			t.Errorf("skein wait --issued approve returned before the run issued it")
		}
		// A run that ended without issuing the key: exit 1, naming it.
		wantExit(t, s.cli(t, nil, "wait", "wait-1", "--issued", "nope", "--timeout", "20s"), exitFailed, `without issuing an op at key "nope"`)
		wantExit(t, s.cli(t, nil, "resolve", "wait-2.approve", "--error", "denied by the test"), 0)
		w = s.cli(t, nil, "wait", "wait-2", "--timeout", "20s")
		wantExit(t, w, exitFailed, "run wait-2 failed", "denied by the test")
	})

	t.Run("cancel", func(t *testing.T) {
		wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--input", "{}", "--id", "cancel-1"), 0)
		s.awaitOutcome(t, "cancel-1", "approve")
		s.awaitStatus(t, "cancel-1", "", "suspended")
		wantExit(t, s.cli(t, nil, "cancel", "cancel-1", "--reason", "the test is over"), 0, "cancel-1")
		w := s.cli(t, nil, "wait", "cancel-1", "--timeout", "20s")
		wantExit(t, w, exitFailed, "run cancel-1 canceled")
		run := s.getRun(t, "cancel-1", "")
		if run.Status != "canceled" || run.CancelReason != "the test is over" {
			t.Errorf("canceled run %+v; want status canceled with the reason", run)
		}
		// It has ended: canceling it again is a conflict.
		want(t, "cancel an ended run", s.call(t, "POST", "/v1/runs/cancel-1/cancel", "", nil), 409, "conflict")
		wantExit(t, s.cli(t, nil, "status", "cancel-1"), exitFailed, "canceled")
	})

	t.Run("child", func(t *testing.T) {
		wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "parent", "--input", "7", "--id", "parent-1"), 0)
		w := s.cli(t, nil, "wait", "parent-1", "--timeout", "20s")
		wantExit(t, w, 0)
		if strings.TrimSpace(w.stdout) != "50" {
			t.Errorf("parent result %q; want 50 (7*7+1)", w.stdout)
		}
		c := s.getRun(t, "parent-1.1", "")
		if c.Workflow != "child" || c.Parent != "parent-1" || c.Status != "completed" || !jsonEq(t, c.Result, "49") || !jsonEq(t, c.Input, "7") {
			t.Errorf("child run %+v", c)
		}
		v := s.outcomes(t, "parent-1", "")
		if len(v.Outcomes) != 1 || v.Outcomes[0].Key != "1" || v.Outcomes[0].Function != "child" || !jsonEq(t, v.Outcomes[0].Value, "49") {
			t.Errorf("parent outcomes %+v", v.Outcomes)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		r := s.call(t, "POST", "/v1/runs", "", `{"module":"srv","workflow":"sleeper","input":{"ms":60000},"id":"slow-1","timeout":"300ms"}`)
		want(t, "start with a timeout", r, 201, "")
		w := s.cli(t, nil, "wait", "slow-1", "--timeout", "20s")
		wantExit(t, w, exitFailed, "run slow-1 canceled")
		if run := s.getRun(t, "slow-1", ""); !strings.Contains(run.CancelReason, "timed out") {
			t.Errorf("timed-out run %+v; want a cancel reason that says it timed out", run)
		}
		want(t, "bad timeout", s.call(t, "POST", "/v1/runs", "", `{"module":"srv","workflow":"echo","timeout":"soon"}`), 400, "bad_request")
	})

	t.Run("not-found-and-bad-requests", func(t *testing.T) {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/v1/runs/nope", ""},
			{"GET", "/v1/runs/nope/outcomes", ""},
			{"POST", "/v1/runs/nope/cancel", ""},
			{"POST", "/v1/runs", `{"module":"nope","workflow":"echo"}`},
			{"POST", "/v1/runs", `{"module":"0000000000000000000000000000000000000000000000000000000000000000"}`},
			{"GET", "/v1/modules/nope", ""},
			{"GET", "/v1/nothing-here", ""},
		} {
			var body any
			if c.body != "" {
				body = c.body
			}
			want(t, c.method+" "+c.path, s.call(t, c.method, c.path, "", body), 404, "not_found")
		}
		for _, body := range []string{
			`{"module":"srv","workflow":"nope"}`,            // unknown workflow
			`{"module":"srv"}`,                              // several workflows, none chosen
			`{"workflow":"echo"}`,                           // no module
			`{"module":"srv","workflow":"echo",}`,           // not JSON
			`{"module":"srv","workflow":"echo","x":1}`,      // unknown field
			`{"module":"srv","workflow":"echo","id":"a.b"}`, // bad run id
			``, // empty
		} {
			want(t, "start "+body, s.call(t, "POST", "/v1/runs", "", body), 400, "bad_request")
		}
		wantExit(t, s.cli(t, nil, "status", "nope"), exitFailed, `no run "nope"`, "404")
		wantExit(t, s.cli(t, nil, "wait", "nope"), exitFailed, `no run "nope"`)
		wantExit(t, s.cli(t, nil, "inspect", "nope"), exitFailed, `no run "nope"`)
		wantExit(t, s.cli(t, nil, "cancel", "nope"), exitFailed, `no run "nope"`)
		wantExit(t, s.cli(t, nil, "start", "nope", "--workflow", "x"), exitFailed, `no module "nope"`)
	})

	s.stop(t)
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServerAuth: with a token every request needs it, the client
// commands send it from --token or $SKEIN_TOKEN.
func TestServerAuth(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), []string{"SKEIN_TOKEN=" + token})
	for _, c := range []struct {
		name, method, path, token string
	}{
		{"no token", "GET", "/v1/runs", ""},
		{"wrong token", "GET", "/v1/runs", "not-" + token},
		{"no token, run", "GET", "/v1/runs/x", ""},
		{"no token, upload", "POST", "/v1/modules", ""},
		{"no token, unknown path", "GET", "/v1/nothing", ""},
	} {
		r := s.call(t, c.method, c.path, c.token, nil)
		want(t, c.name, r, 401, "unauthorized")
	}
	want(t, "right token", s.call(t, "GET", "/v1/runs", token, nil), 200, "")
	want(t, "right token, unknown run", s.call(t, "GET", "/v1/runs/x", token, nil), 404, "not_found")

	wantExit(t, s.cli(t, nil, "status", "x"), exitFailed, "401", "token")
	env := []string{"SKEIN_TOKEN=" + token}
	deployServerModule(t, s, env)
	wantExit(t, s.cli(t, env, "start", "srv", "--workflow", "echo", "--input", `"hi"`, "--id", "auth-1"), 0)
	w := s.cli(t, nil, "wait", "auth-1", "--token", token, "--timeout", "20s")
	wantExit(t, w, 0)
	if strings.TrimSpace(w.stdout) != `"hi"` {
		t.Errorf("wait printed %q", w.stdout)
	}
	// $SKEIN_SERVER picks the server for inspect when --db is not given.
	wantExit(t, skeinEnv(t, []string{"SKEIN_SERVER=" + s.url, "SKEIN_TOKEN=" + token}, "inspect", "auth-1"), 0, "auth-1", "completed")
	s.stop(t)
}

// TestServerRestart stops the server with SIGTERM while one run sleeps on
// a timer, one waits for a promise and one runs a long step, starts it
// again on the same database, and checks that all of them complete.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	// A short grace period, so that the stop interrupts the running step.
	s := startServer(t, db, nil, "--grace", "100ms")
	deployServerModule(t, s, nil)
	start := func(id, wf, input string) {
		t.Helper()
		r := s.call(t, "POST", "/v1/runs", "", `{"module":"srv","workflow":"`+wf+`","input":`+input+`,"id":"`+id+`"}`)
		want(t, "start "+id, r, 201, "")
	}
	start("r-sleep", "sleeper", `{"ms":3000}`)
	start("r-wait", "waiter", `{}`)
	start("r-busy", "busy", `{"ms":1500}`)
	s.awaitStatus(t, "r-sleep", "", "suspended")
	s.awaitStatus(t, "r-wait", "", "suspended")
	s.awaitStatus(t, "r-busy", "", "running")
	time.Sleep(300 * time.Millisecond) // well inside the step's body
	if run := s.getRun(t, "r-busy", ""); run.Status != "running" {
		t.Fatalf("r-busy is %s before the restart; want running", run.Status)
	}
	if v := s.outcomes(t, "r-sleep", ""); v.Status != "suspended" || !slices.Equal(v.keys(), []string{"1"}) {
		t.Fatalf("r-sleep before the restart: %s with outcomes %q; want suspended on its timer", v.Status, v.keys())
	}
	s.stop(t)

	s2 := startServer(t, db, nil)
	if run := s2.getRun(t, "r-wait", ""); run.Status != "suspended" {
		t.Errorf("r-wait is %s after the restart; want suspended", run.Status)
	}
	wantExit(t, s2.cli(t, nil, "resolve", "r-wait.approve", "--value", `"after restart"`), 0)
	for id, res := range map[string]string{
		"r-sleep": `"slept 3000ms"`,
		"r-wait":  `"approved: after restart"`,
		"r-busy":  `"worked 1500ms"`,
	} {
		w := s2.cli(t, nil, "wait", id, "--timeout", "20s")
		wantExit(t, w, 0)
		if strings.TrimSpace(w.stdout) != res {
			t.Errorf("%s: result %q; want %s", id, w.stdout, res)
		}
	}
	v := s2.outcomes(t, "r-sleep", "")
	if !slices.Equal(v.keys(), []string{"1", "2"}) {
		t.Errorf("r-sleep outcomes %q; want 1, 2", v.keys())
	}
	v = s2.outcomes(t, "r-busy", "")
	if len(v.Outcomes) != 1 || v.Outcomes[0].Key != "1" || v.Outcomes[0].Function != "work" || v.Outcomes[0].Status != "ok" {
		t.Errorf("r-busy outcomes %+v", v.Outcomes)
	}
	s2.stop(t)
}

// TestServerHelp: every new command has --help.
func TestServerHelp(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"serve", "deploy", "start", "status", "wait", "resolve", "cancel", "inspect"} {
		flag := "-server"
		if c == "serve" {
			flag = "-addr"
		}
		wantExit(t, skeinEnv(t, nil, c, "--help"), 0, "usage: skein "+c, flag)
	}
}
