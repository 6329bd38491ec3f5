package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/server"
)

func TestNewChecksURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:7070", "ftp://x", "http://", "::"} {
		if _, err := client.New(u); err == nil || !strings.Contains(err.Error(), "is not an http:// or https:// URL") {
			t.Errorf("New(%q): %v; want the URL rule", u, err)
		}
	}
	c, err := client.New("https://skein.example/")
	if err != nil || c.BaseURL() != "https://skein.example" {
		t.Errorf("New: %v, base %q", err, c.BaseURL())
	}
}

// countingTransport counts the requests it sends.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestTokenAndOptions(t *testing.T) {
	s := newServer(t, server.Options{Token: "s3cret"})
	ctx := bounded(t)
	_, err := newClient(t, s).Modules(ctx)
	wantError(t, "Modules without the token", err, http.StatusUnauthorized, client.CodeUnauthorized, "")
	_, err = newClient(t, s, client.WithToken("wrong")).Modules(ctx)
	wantError(t, "Modules with a wrong token", err, http.StatusUnauthorized, client.CodeUnauthorized, "")
	var tr countingTransport
	c := newClient(t, s, client.WithToken("s3cret"), client.WithHTTPClient(&http.Client{Transport: &tr}), client.WithUserAgent("shop/1.0"))
	if ms, err := c.Modules(ctx); err != nil || len(ms) != 0 {
		t.Errorf("Modules with the token: %v, %v; want none", ms, err)
	}
	if tr.n.Load() != 1 {
		t.Errorf("the given http.Client sent %d requests; want 1", tr.n.Load())
	}
	agents := s.userAgents()
	if len(agents) != 3 || agents[0] != client.DefaultUserAgent || agents[2] != "shop/1.0" {
		t.Errorf("User-Agents %q; want the default twice, then shop/1.0", agents)
	}
	text, err := c.Metrics(ctx)
	if err != nil || !strings.Contains(string(text), "# TYPE skein_runs gauge") {
		t.Errorf("Metrics: %v\n%s", err, text)
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(context.Background(), "r1")
	var ue *client.UnreachableError
	var uerr *url.Error
	if !errors.As(err, &ue) || ue.Server != base || !errors.As(err, &uerr) || errors.As(err, new(*client.Error)) {
		t.Fatalf("Run of a server that is not there: %v (%T); want an *UnreachableError wrapping a *url.Error", err, err)
	}
	if want := "cannot reach the skein server at " + base + ": Get "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("the error says %q; want it to start %q", err, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Run(ctx, "r1"); err != context.Canceled {
		t.Errorf("Run with an ended context: %v; want context.Canceled itself", err)
	}
}

// TestForeignAnswers: answers that are not skein's (a proxy's page) are
// reported as such.
func TestForeignAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/runs/r1" {
			w.Write([]byte("<html>welcome</html>"))
			return
		}
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Module(context.Background(), "m")
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway || ae.Code != "" || err.Error() != "GET /v1/modules/m: bad gateway (HTTP 502)" {
		t.Errorf("a 502 page: %v (%+v)", err, ae)
	}
	if errors.Is(err, client.Code("")) {
		t.Error("an answer without a code matches the empty Code")
	}
	_, err = c.Run(context.Background(), "r1")
	if err == nil || errors.As(err, new(*client.Error)) || !strings.Contains(err.Error(), "GET /v1/runs/r1: the answer is not what skein serve sends") {
		t.Errorf("a 200 page that is not JSON: %v", err)
	}
}

// TestImportsOnlyTheStandardLibrary: a program that only talks to a
// server does not compile the engine (host, store, wazero): client and
// worker import the standard library, client and activity (a leaf of the
// standard library) only.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./client", "./worker")
	cmd.Dir = wasmbuild.Root()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	if want := "github.com/skeinrun/skein/activity github.com/skeinrun/skein/client github.com/skeinrun/skein/worker"; strings.Join(got, " ") != want {
		t.Errorf("client and worker import %v; want only the standard library, activity and client", got)
	}
}
