package client_test

// The client's tests run against a real server in this process: package
// server's handler on a host with a SQLite store, executing its runs
// (host.Work), on an httptest server at 127.0.0.1.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/server"
	"github.com/skeinrun/skein/store/sqlite"
)

// testServer is a skein server in this process.
type testServer struct {
	URL  string
	Host *host.Host
	// The server records the User-Agent of every request (agents), and
	// signals Claims when a task claim arrives.
	mu     sync.Mutex
	agents []string
	Claims chan struct{}
	stop   func()
}

// startServer starts a server with o (Stop is set) in dir; its host runs
// remote activities (calls no function serves become tasks).
func startServer(dir string, o server.Options) (*testServer, error) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "skein.db"), sqlite.Options{})
	if err != nil {
		return nil, err
	}
	cache := testcache.Shared()
	// No compile deadline: under -race on a loaded machine a first compile
	// can take minutes.
	h, err := host.New(ctx, host.Config{Store: st, RemoteActivities: true, CacheDir: cache, CompileTimeout: -1})
	if err != nil {
		st.Close()
		return nil, err
	}
	wctx, stopWork := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- h.Work(wctx, host.WorkOptions{Poll: 20 * time.Millisecond}) }()
	o.Stop = wctx
	s := &testServer{Host: h, Claims: make(chan struct{}, 16)}
	api := server.New(h, o)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.agents = append(s.agents, r.UserAgent())
		s.mu.Unlock()
		if r.URL.Path == "/v1/tasks/claim" {
			select {
			case s.Claims <- struct{}{}:
			default:
			}
		}
		api.ServeHTTP(w, r)
	}))
	s.URL = srv.URL
	s.stop = func() {
		stopWork()
		<-worked
		srv.Close()
		h.Close(ctx)
		st.Close()
	}
	return s, nil
}

// newServer is startServer for a test, stopped at its end.
func newServer(t testing.TB, o server.Options) *testServer {
	t.Helper()
	s, err := startServer(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

// userAgents returns the User-Agent headers of the requests received so far.
func (s *testServer) userAgents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.agents...)
}

// newClient is a client of s, with opts.
func newClient(t testing.TB, s *testServer, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(s.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// module reads the module built from the package at pkg (a path from the
// module root, "./testdata/workflows/server").
func module(t testing.TB, pkg string) []byte {
	t.Helper()
	b, err := os.ReadFile(wasmbuild.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deploy deploys the module of pkg under name.
func deploy(t testing.TB, c *client.Client, name, pkg string) client.Module {
	t.Helper()
	m, _, err := c.Deploy(context.Background(), name, module(t, pkg))
	if err != nil {
		t.Fatalf("deploy %s: %v", pkg, err)
	}
	return m
}

// wantError checks that err is an *Error with status, code and message,
// and that errors.Is matches its code.
func wantError(t testing.TB, what string, err error, status int, code client.Code, message string) {
	t.Helper()
	var ae *client.Error
	if !errors.As(err, &ae) {
		t.Errorf("%s: %v (%T); want an *client.Error %d %s", what, err, err, status, code)
		return
	}
	if ae.Status != status || ae.Code != code || (message != "" && ae.Message != message) {
		t.Errorf("%s: %d %s %q; want %d %s %q", what, ae.Status, ae.Code, ae.Message, status, code, message)
	}
	if !errors.Is(err, code) {
		t.Errorf("%s: errors.Is(err, %q) is false", what, code)
	}
	if want := fmt.Sprintf("%s (HTTP %d %s)", ae.Message, status, code); err.Error() != want {
		t.Errorf("%s: the error says %q; want %q", what, err.Error(), want)
	}
}

// setup starts a server with o for a test and returns it, a client of it
// and a context for the test's calls.
func setup(t testing.TB, o server.Options) (*testServer, *client.Client, context.Context) {
	t.Helper()
	s := newServer(t, o)
	return s, newClient(t, s), bounded(t)
}

// bounded is a context for one test's calls.
func bounded(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
