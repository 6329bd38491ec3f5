package main

// Real-process tests of the HTTP activity's egress rules beyond the allow
// list: special-purpose addresses behind allowed names, the response
// headers' share of --http-max-response, the bounds on requests at once,
// and the server's own API (docs/activities.md, docs/security.md).

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

var (
	testBinOnce sync.Once
	testBin     string
	testBinErr  error
)

// skeinTestBin is a skein binary built with -tags skeintest, whose HTTP
// activity resolves names from $SKEIN_TEST_RESOLVE (testresolver.go).
func skeinTestBin(t *testing.T) string {
	t.Helper()
	testBinOnce.Do(func() {
		testBin = skeinBin + "-skeintest"
		cmd := exec.Command("go", "build", "-tags", "skeintest", "-o", testBin, "./cmd/skein")
		cmd.Dir = wasmbuild.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			testBinErr = fmt.Errorf("build skein -tags skeintest: %v\n%s", err, out)
		}
	})
	if testBinErr != nil {
		t.Fatal(testBinErr)
	}
	return testBin
}

// startFetch starts the httpcall workflow "fetch" as run id.
func startFetch(t *testing.T, s *skeinServer, id string, req map[string]any, wait bool) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"id": id, "module": "httpcall", "workflow": "fetch", "input": map[string]any{"req": req, "wait": wait}})
	want(t, "start "+id, s.call(t, "POST", "/v1/runs", "", string(body)), 201, "")
}

// fetchResult runs "fetch" as run id to its end and returns its result.
func fetchResult(t *testing.T, s *skeinServer, id string, req map[string]any) string {
	t.Helper()
	startFetch(t, s, id, req, false)
	run := s.awaitStatus(t, id, "", "completed", "failed")
	if run.Status != "completed" {
		t.Fatalf("run %s: %s %q", id, run.Status, run.Error)
	}
	return string(run.Result)
}

// TestHTTPEgressSpecialAddresses: through a real `skein serve`, names the
// allow list allows but that resolve to a special-purpose address (a
// NAT64, 6to4, Teredo or IPv4-compatible form of the metadata address,
// the 192.0.0.192 metadata address, a documentation or reserved address)
// are denied with the error docs/activities.md gives, while a name that
// resolves to loopback still reaches the local server.
func TestHTTPEgressSpecialAddresses(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "local") })
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	const meta = "169.254.169.254, a link-local address (such as a cloud metadata endpoint)"
	cases := []struct{ name, addr, what string }{
		{"nat64.test", "64:ff9b::a9fe:a9fe", "a NAT64 address embedding " + meta},
		{"nat64-loopback.test", "64:ff9b::7f00:1", "a NAT64 address embedding 127.0.0.1, a loopback address"},
		{"compat.test", "::a9fe:a9fe", "an IPv4-compatible address (::/96, deprecated) embedding " + meta},
		{"6to4.test", "2002:a9fe:a9fe::1", "a 6to4 address embedding " + meta},
		{"teredo.test", "2001:0:4136:e378:8000:63bf:5601:5601", "a Teredo address (2001::/32) whose client is " + meta},
		{"oci.test", "192.0.0.192", "a cloud metadata address"},
		{"docs.test", "192.0.2.1", "a documentation address (192.0.2.0/24)"},
		{"reserved.test", "240.0.0.1", "a reserved address (240.0.0.0/4)"},
	}
	resolve := []string{"local.test=127.0.0.1"}
	allow := []string{"local.test"}
	for _, c := range cases {
		resolve = append(resolve, c.name+"="+c.addr)
		allow = append(allow, c.name)
	}
	s := startServeBin(t, skeinTestBin(t), []string{"--db", filepath.Join(t.TempDir(), "skein.db")}, []string{"SKEIN_TEST_RESOLVE=" + strings.Join(resolve, ",")},
		"--allow-http", strings.Join(allow, ","), "--http-timeout", "2s")
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, httpcallWorkflows), "--name", "httpcall"), 0)

	for i, c := range cases {
		startFetch(t, s, fmt.Sprintf("special-%d", i), map[string]any{"url": "http://" + c.name + ":" + port + "/x"}, false)
	}
	startFetch(t, s, "local", map[string]any{"url": "http://local.test:" + port + "/x"}, false)
	for i, c := range cases {
		id := fmt.Sprintf("special-%d", i)
		run := s.awaitStatus(t, id, "", "completed", "failed")
		wantRes := `{"err":"HTTP request to ` + c.name + `:` + port + ` denied: it resolves to ` + c.addr + `, ` + c.what +
			`; name the address itself in the egress allow list (Config.HTTPAllow; --allow-http) to allow it"}`
		if string(run.Result) != wantRes {
			t.Errorf("%s (%s): %s %s %q\nwant result %s", c.name, c.addr, run.Status, run.Result, run.Error, wantRes)
		}
	}
	if run := s.awaitStatus(t, "local", "", "completed", "failed"); string(run.Result) != `{"status":200,"body":"local"}` {
		t.Errorf("a name resolving to loopback: %s %s %q", run.Status, run.Result, run.Error)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the local server got %d requests, want 1", n)
	}
}

// TestHTTPActivityResponseHeaders: the response's headers count against
// --http-max-response with its body: huge headers fail the op with a
// limit error (they are not read whole, nor recorded), and headers plus a
// body under the limit by itself go over it together.
func TestHTTPActivityResponseHeaders(t *testing.T) {
	t.Parallel()
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/headers":
			v := strings.Repeat("h", 1000)
			for i := range 1000 { // 1 MB of headers
				w.Header().Set(fmt.Sprintf("X-Big-%d", i), v)
			}
		case "/both":
			w.Write(make([]byte, 950)) // the body alone is under the limit
			return
		}
		fmt.Fprint(w, "small")
	})
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--allow-http", strings.TrimPrefix(srv.URL, "http://"), "--http-max-response", "1000")
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, httpcallWorkflows), "--name", "httpcall"), 0)
	const limit = ` (limit Config.HTTPMaxResponseBytes = 1000 bytes; --http-max-response)"}`
	for _, tc := range []struct{ path, want string }{
		{"/small", `{"status":200,"body":"small"}`},
		{"/headers", `{"err":"the response headers of GET ` + srv.URL + `/headers are larger than 1000 bytes` + limit},
		{"/both", `{"err":"the response of GET ` + srv.URL + `/both is larger than 1000 bytes` + limit},
	} {
		if got := fetchResult(t, s, strings.TrimPrefix(tc.path, "/"), map[string]any{"url": srv.URL + tc.path}); got != tc.want {
			t.Errorf("%s: result %.300s\nwant %s", tc.path, got, tc.want)
		}
	}
}

// concurrencyServer counts the requests it holds at once, in all and by
// the path's last element (a run's id), and the connections open to it.
// It holds every request until the test opens its gate, or until a count
// goes over its bound, which ends the holding at once.
type concurrencyServer struct {
	url                   string
	inFlight, conns       atomic.Int64
	mu                    sync.Mutex
	byRun                 map[string]int
	maxAll, maxRun, maxCx int64
	gate, over            chan struct{}
	overOnce              sync.Once
}

func newConcurrencyServer(t *testing.T, allBound, runBound int) *concurrencyServer {
	t.Helper()
	c := &concurrencyServer{byRun: map[string]int{}, gate: make(chan struct{}), over: make(chan struct{})}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		run := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		n := c.inFlight.Add(1)
		c.mu.Lock()
		c.byRun[run]++
		c.maxAll, c.maxRun = max(c.maxAll, n), max(c.maxRun, int64(c.byRun[run]))
		if n > int64(allBound) || c.byRun[run] > runBound {
			c.overOnce.Do(func() { close(c.over) })
		}
		c.mu.Unlock()
		select {
		case <-c.over:
		case <-c.gate:
		case <-r.Context().Done():
		}
		c.mu.Lock()
		c.byRun[run]--
		c.mu.Unlock()
		c.inFlight.Add(-1)
	})
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			n := c.conns.Add(1)
			c.mu.Lock()
			c.maxCx = max(c.maxCx, n)
			c.mu.Unlock()
		case http.StateClosed, http.StateHijacked:
			c.conns.Add(-1)
		}
	}
	c.url = srv.URL
	return c
}

// full waits until n requests are held at once or a bound was passed.
func (c *concurrencyServer) full(t *testing.T, n int64) {
	t.Helper()
	for deadline := time.Now().Add(runWait); c.inFlight.Load() < n; {
		select {
		case <-c.over:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests held after %v, want %d", c.inFlight.Load(), runWait, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHTTPActivityConcurrency: runs that start many skein.HTTP calls at
// once against a local server never have more than the per-run bound
// (16 by default) in progress each, nor more than --http-max-concurrent
// in all; the others wait and all complete. While the server holds the
// bound's worth of requests the API answers, and the server's open files
// stay bounded.
func TestHTTPActivityConcurrency(t *testing.T) {
	t.Parallel()
	const perRun, all, runs, calls = 16, 20, 3, 60
	c := newConcurrencyServer(t, all, perRun)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--allow-http", strings.TrimPrefix(c.url, "http://"), "--http-max-concurrent", fmt.Sprint(all))
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, httpcallWorkflows), "--name", "httpcall"), 0)
	baseFiles := s.openFiles(t)
	files := sampleFiles(t, s)
	for i := range runs {
		id := fmt.Sprintf("flood-%d", i)
		body, _ := json.Marshal(map[string]any{"id": id, "module": "httpcall", "workflow": "fanout", "input": map[string]any{"url": c.url + "/slow/" + id, "n": calls}})
		want(t, "start "+id, s.call(t, "POST", "/v1/runs", "", string(body)), 201, "")
	}
	c.full(t, all)
	wantExit(t, s.cli(t, nil, "status", "flood-0"), 0, "flood-0", "running")
	want(t, "list runs during the flood", s.call(t, "GET", "/v1/runs", "", nil), 200, "")
	close(c.gate)
	for i := range runs {
		id := fmt.Sprintf("flood-%d", i)
		if run := s.awaitStatus(t, id, "", "completed", "failed"); string(run.Result) != fmt.Sprintf(`{"ok":%d}`, calls) {
			t.Errorf("run %s: %s %s %q", id, run.Status, run.Result, run.Error)
		}
	}
	peak := files.peak()
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("at most %d requests at once (%d of one run), %d connections; open files %d before, at most %d during", c.maxAll, c.maxRun, c.maxCx, baseFiles, peak)
	if c.maxAll != all || c.maxRun > perRun {
		t.Errorf("%d requests at once, %d of one run; want %d (the bound, reached) and at most %d", c.maxAll, c.maxRun, all, perRun)
	}
	// Each request in progress holds a connection; the client keeps at
	// most 16 idle ones for the host besides.
	if c.maxCx > all+16 {
		t.Errorf("%d connections open at once, want at most %d", c.maxCx, all+16)
	}
	if peak > baseFiles+all+16+8 {
		t.Errorf("skein serve held %d files open during the flood (%d before)", peak, baseFiles)
	}
	if strings.Contains(s.stderr.String(), "too many open files") {
		t.Errorf("skein serve ran out of files:\n%s", s.stderr.String())
	}
}

// TestHTTPActivityOwnAPI: `skein serve --allow-http 127.0.0.1` (and
// localhost) still does not let a module reach the server's own API: a
// list of runs, another run's cancellation and its promise's settlement
// are denied, directly, by name and by a redirect, naming why; the other
// run is unaffected and completes when the test settles its promise.
func TestHTTPActivityOwnAPI(t *testing.T) {
	t.Parallel()
	local, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			return
		}
		fmt.Fprint(w, "fine")
	})
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--allow-http", "127.0.0.1,localhost")
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, httpcallWorkflows), "--name", "httpcall"), 0)
	startFetch(t, s, "victim", map[string]any{"url": local.URL + "/"}, true)
	s.awaitOutcome(t, "victim", "1") // its call is done; it waits for the promise "go"
	self := s.hostPort()
	port := self[strings.LastIndex(self, ":")+1:]
	reason := ` denied: it resolves to ` + self + `, the address and port skein serve listens on (Config.APIAddrs); requests never reach it, whatever the egress allow list names"}`
	for _, tc := range []struct {
		id   string
		req  map[string]any
		want string
	}{
		{"list", map[string]any{"url": s.url + "/v1/runs"}, `{"err":"HTTP request to ` + self + reason},
		{"cancel", map[string]any{"method": "POST", "url": s.url + "/v1/runs/victim/cancel", "header": map[string]string{"Content-Type": "application/json"}},
			`{"err":"HTTP request to ` + self + reason},
		{"settle", map[string]any{"method": "POST", "url": s.url + "/v1/promises/victim.go", "header": map[string]string{"Content-Type": "application/json"}, "body": []byte(`{"value":"x"}`)},
			`{"err":"HTTP request to ` + self + reason},
		{"by-name", map[string]any{"method": "POST", "url": "http://localhost:" + port + "/v1/runs/victim/cancel", "header": map[string]string{"Content-Type": "application/json"}},
			`{"err":"HTTP request to localhost:` + port + reason},
		{"redirect", map[string]any{"url": local.URL + "/?to=" + s.url + "/v1/runs"},
			`{"err":"HTTP redirect from ` + local.URL + `/?to=` + s.url + `/v1/runs to ` + self + reason},
	} {
		if got := fetchResult(t, s, tc.id, tc.req); got != tc.want {
			t.Errorf("%s: result %.300s\nwant %s", tc.id, got, tc.want)
		}
	}
	if run := s.getRun(t, "victim", ""); run.Status == "canceled" || run.CancelReason != "" {
		t.Fatalf("the other run was canceled: %+v", run)
	}
	want(t, "settle victim.go", s.call(t, "POST", "/v1/promises/victim.go", "", `{"value":"from the test"}`), 200, "")
	if run := s.awaitStatus(t, "victim", "", "completed", "failed", "canceled"); string(run.Result) != `{"status":200,"body":"fine"}` {
		t.Errorf("the other run: %s %s %q", run.Status, run.Result, run.Error)
	}
}
