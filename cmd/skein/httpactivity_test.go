package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

const httpcallWorkflows = "./testdata/workflows/httpcall"

// countingServer is a loopback server that counts its requests.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	n := &atomic.Int64{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1); h(w, r) }))
	t.Cleanup(s.Close)
	return s, n
}

// TestHTTPActivityServe: a real `skein serve --allow-http 127.0.0.1:PORT`
// runs a workflow whose skein.HTTP reaches the allowed server; a request
// to another port is denied and a response over --http-max-response
// fails the op, each with the error text docs/activities.md gives, which
// names the flag.
func TestHTTPActivityServe(t *testing.T) {
	t.Parallel()
	allowed, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write(make([]byte, 300))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, "hello from "+r.URL.Path)
	})
	denied, deniedHits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	allowedAddr := strings.TrimPrefix(allowed.URL, "http://")
	deniedAddr := strings.TrimPrefix(denied.URL, "http://")

	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--allow-http", allowedAddr, "--http-max-response", "256")
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, httpcallWorkflows), "--name", "httpcall"), 0)

	for _, tc := range []struct {
		id, url, want string
	}{
		{"ok", allowed.URL + "/hello", `{"status":202,"body":"hello from /hello"}`},
		{"denied", denied.URL + "/x", `{"err":"HTTP request to ` + deniedAddr + ` denied: the host is not in the egress allow list (Config.HTTPAllow; --allow-http)"}`},
		{"big", allowed.URL + "/big", `{"err":"the response of GET ` + allowed.URL + `/big is larger than 256 bytes (limit Config.HTTPMaxResponseBytes = 256 bytes; --http-max-response)"}`},
	} {
		body, _ := json.Marshal(map[string]any{"id": tc.id, "module": "httpcall", "workflow": "fetch", "input": map[string]any{"req": map[string]any{"url": tc.url}}})
		want(t, "start "+tc.id, s.call(t, "POST", "/v1/runs", "", string(body)), 201, "")
		run := s.awaitStatus(t, tc.id, "", "completed", "failed")
		if run.Status != "completed" || string(run.Result) != tc.want {
			t.Errorf("run %s: %s %s %q\nwant result %s", tc.id, run.Status, run.Result, run.Error, tc.want)
		}
	}
	if n, d := hits.Load(), deniedHits.Load(); n != 2 || d != 0 {
		t.Errorf("the allowed server got %d requests (want 2), the denied one %d (want 0)", n, d)
	}
	s.stop(t)
}

// TestHTTPActivityRun: `skein run --allow-http` makes the request, and
// --http-timeout bounds it with the error text docs/activities.md gives.
func TestHTTPActivityRun(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprint(w, "ran")
	})
	defer close(release)
	addr := strings.TrimPrefix(srv.URL, "http://")
	wasm := wasmbuild.Build(t, httpcallWorkflows)
	dir := t.TempDir()
	for _, tc := range []struct{ path, timeout, want string }{
		{"/ok", "30s", `{"status":200,"body":"ran"}`},
		{"/slow", "200ms", `{"err":"GET ` + srv.URL + `/slow did not complete within 200ms (limit Config.HTTPTimeout = 200ms; --http-timeout)"}`},
	} {
		in, _ := json.Marshal(map[string]any{"req": map[string]any{"url": srv.URL + tc.path}})
		r := skein(t, dir, "run", wasm, "--workflow", "fetch", "--db", filepath.Join(dir, "skein.db"), "--allow-http", "localhost:1,"+addr, "--http-timeout", tc.timeout, "--input", string(in), "--json")
		wantExit(t, r, 0)
		if v := decodeRun(t, r); v.Status != "completed" || string(v.Result) != tc.want {
			t.Errorf("%s: %s %s, want result %s", tc.path, v.Status, v.Result, tc.want)
		}
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("the server got %d requests, want 2", n)
	}
}
