package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/activity"
)

// fakeResolver gives names addresses without a DNS server.
type fakeResolver map[string]string

func (f fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	a, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []net.IPAddr{{IP: net.ParseIP(a)}}, nil
}

// server serves the paths the tests use on 127.0.0.1.
func server(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Method", r.Method)
		w.Header().Set("X-Token", r.Header.Get("X-Token"))
		b := make([]byte, r.ContentLength)
		r.Body.Read(b)
		w.WriteHeader(http.StatusCreated)
		w.Write(append([]byte("got "), b...))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 2<<20))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/to-denied", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://denied.invalid/x", http.StatusFound)
	})
	mux.HandleFunc("/to-echo", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/echo", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, strings.TrimPrefix(srv.URL, "http://")
}

func newClient(t *testing.T, p Policy) *Client {
	t.Helper()
	c, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestAllowedRequest(t *testing.T) {
	_, addr := server(t)
	c := newClient(t, Policy{Allow: []string{addr}})
	resp, err := c.Do(context.Background(), activity.HTTPRequest{Method: "POST", URL: "http://" + addr + "/to-echo", Header: map[string]string{"X-Token": "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	// The redirect to /echo on the same host is followed as a GET.
	if resp.Status != http.StatusCreated || resp.Header["X-Method"] != "GET" || string(resp.Body) != "got " {
		t.Errorf("redirected response %+v", resp)
	}
	resp, err = c.Do(context.Background(), activity.HTTPRequest{Method: "PUT", URL: "http://" + addr + "/echo", Header: map[string]string{"X-Token": "t2"}, Body: []byte("abc")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusCreated || resp.Header["X-Method"] != "PUT" || resp.Header["X-Token"] != "t2" || string(resp.Body) != "got abc" {
		t.Errorf("response %+v", resp)
	}
}

func TestDenied(t *testing.T) {
	srv, addr := server(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	metaName := "metadata.test"
	res := fakeResolver{metaName: "169.254.169.254", "rebind.test": "169.254.1.1"}
	c := newClient(t, Policy{Allow: []string{addr, metaName, "rebind.test:80"}, Resolver: res})
	cases := []struct {
		url, want string
	}{
		{"http://denied.invalid/x", `HTTP request to denied.invalid:80 denied: the host is not in the egress allow list (Policy.Allow)`},
		{"http://127.0.0.1:" + strconv.Itoa(port+1) + "/x", `HTTP request to 127.0.0.1:` + strconv.Itoa(port+1) + ` denied: the host is not in the egress allow list`},
		{"http://" + addr + "/to-denied", `HTTP redirect from http://` + addr + `/to-denied to denied.invalid:80 denied: the host is not in the egress allow list`},
		{"http://" + metaName + "/latest/meta-data", `HTTP request to metadata.test:80 denied: it resolves to 169.254.169.254, a link-local address (such as a cloud metadata endpoint); name the address itself in the egress allow list (Policy.Allow) to allow it`},
		{"http://rebind.test/", `HTTP request to rebind.test:80 denied: it resolves to 169.254.1.1, a link-local address`},
		{"file:///etc/passwd", `denied: scheme "file" (only http and https)`},
		{"http://user:pw@" + addr + "/echo", `denied: user information in the URL`},
	}
	for _, tc := range cases {
		_, err := c.Do(context.Background(), activity.HTTPRequest{URL: tc.url})
		var d *DeniedError
		if !errors.As(err, &d) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a DeniedError containing %q", tc.url, err, tc.want)
		}
	}
}

// An address named in the allow list may be reached even when it is
// link-local; checked without dialing (no traffic leaves the machine).
func TestNamedSpecialAddress(t *testing.T) {
	c := newClient(t, Policy{Allow: []string{"169.254.169.254", "[fd00:ec2::254]:80"}})
	for _, a := range []string{"169.254.169.254", "fd00:ec2::254"} {
		if err := c.checkAddr(a, netip.AddrPortFrom(netip.MustParseAddr(a), 80)); err != nil {
			t.Errorf("%s named in the allow list: %v", a, err)
		}
	}
	c2 := newClient(t, Policy{Allow: []string{"metadata.test"}})
	for _, a := range []string{"169.254.169.254", "fd00:ec2::254", "100.100.100.200", "fe80::1", "0.0.0.0", "224.0.0.1"} {
		if err := c2.checkAddr("metadata.test:80", netip.AddrPortFrom(netip.MustParseAddr(a), 80)); err == nil {
			t.Errorf("%s allowed though not named", a)
		}
	}
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "::1"} {
		if err := c2.checkAddr("x:80", netip.AddrPortFrom(netip.MustParseAddr(a), 80)); err != nil {
			t.Errorf("%s: %v (only the host name is checked for ordinary addresses)", a, err)
		}
	}
}

func TestLimits(t *testing.T) {
	_, addr := server(t)
	c := newClient(t, Policy{Allow: []string{addr}, MaxResponseBytes: 1 << 20, Timeout: 300 * time.Millisecond})
	_, err := c.Do(context.Background(), activity.HTTPRequest{URL: "http://" + addr + "/big"})
	want := "the response of GET http://" + addr + "/big is larger than 1048576 bytes (limit Policy.MaxResponseBytes = 1048576 bytes)"
	if err == nil || err.Error() != want {
		t.Errorf("oversized response: got %v, want %q", err, want)
	}
	start := time.Now()
	_, err = c.Do(context.Background(), activity.HTTPRequest{URL: "http://" + addr + "/slow"})
	want = "GET http://" + addr + "/slow did not complete within 300ms (limit Policy.Timeout = 300ms)"
	if err == nil || err.Error() != want {
		t.Errorf("slow response: got %v, want %q", err, want)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the timeout took %s", d)
	}
	// A canceled caller is not reported as the policy's timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Do(ctx, activity.HTTPRequest{URL: "http://" + addr + "/slow"})
	var le *LimitError
	if err == nil || errors.As(err, &le) {
		t.Errorf("canceled request: got %v, want a plain error", err)
	}
}

func TestBadPolicy(t *testing.T) {
	for _, a := range []string{"", "http://x.com", "x.com/path", "user@x.com", "x.com:"} {
		if _, err := New(Policy{Allow: []string{a}}); err == nil {
			t.Errorf("allow entry %q accepted", a)
		}
	}
}

// A request that cannot be made at all says so with ErrBadRequest.
func TestBadRequest(t *testing.T) {
	c := newClient(t, Policy{Allow: []string{"x.test"}})
	for _, r := range []activity.HTTPRequest{{URL: "http://%zz/"}, {Method: "BAD METHOD", URL: "http://x.test/"}} {
		if _, err := c.Do(context.Background(), r); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: got %v, want ErrBadRequest", r, err)
		}
	}
}

// TestResponseHeaders: the headers count against MaxResponseBytes with
// the body: headers over the bound stop the read there (the transport's
// MaxResponseHeaderBytes; 10 MB are not read whole), and headers plus a
// body under the bound by itself go over it together.
func TestResponseHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("headers"))
		for i := range n {
			w.Header().Set(fmt.Sprintf("X-H%d", i), strings.Repeat("v", 100))
		}
		body, _ := strconv.Atoi(r.URL.Query().Get("body"))
		w.Write(make([]byte, body))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := newClient(t, Policy{Allow: []string{addr}, MaxResponseBytes: 4000})
	const limit = " (limit Policy.MaxResponseBytes = 4000 bytes)"
	for _, tc := range []struct{ query, want string }{
		{"headers=10&body=100", ""},
		{"headers=100000", "the response headers of GET URL are larger than 4000 bytes" + limit},
		{"headers=38", "the response headers of GET URL are larger than 4000 bytes" + limit},
		{"headers=30&body=900", "the response of GET URL is larger than 4000 bytes" + limit},
		{"body=3900", ""},
		{"body=4000", "the response of GET URL is larger than 4000 bytes" + limit},
	} {
		url := srv.URL + "/?" + tc.query
		resp, err := c.Do(context.Background(), activity.HTTPRequest{URL: url})
		want := strings.ReplaceAll(tc.want, "URL", url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.query, err)
		case tc.want != "" && (err == nil || err.Error() != want):
			t.Errorf("%s: got %v (%d headers), want %q", tc.query, err, len(resp.Header), want)
		}
	}
}

// TestReadCountsHeaders: read counts the headers' names and values
// (several values joined) against the bound even when the transport let
// them through.
func TestReadCountsHeaders(t *testing.T) {
	c := newClient(t, Policy{MaxResponseBytes: 100})
	for _, tc := range []struct {
		header http.Header
		body   string
		want   string
	}{
		{http.Header{"A": {strings.Repeat("x", 96)}}, "", ""}, // 97 + 0
		{http.Header{"A": {strings.Repeat("x", 96)}}, "abc", ""},
		{http.Header{"A": {strings.Repeat("x", 96)}}, "abcd", "the response of GET u is larger than 100 bytes (limit Policy.MaxResponseBytes = 100 bytes)"},
		{http.Header{"A": {strings.Repeat("x", 50), strings.Repeat("y", 48)}}, "", "the response headers of GET u are larger than 100 bytes (limit Policy.MaxResponseBytes = 100 bytes)"},
	} {
		resp := &http.Response{Status: "200 OK", StatusCode: 200, Header: tc.header, Body: io.NopCloser(strings.NewReader(tc.body))}
		out, err := c.read(resp, "GET", "u")
		switch {
		case tc.want == "" && (err != nil || string(out.Body) != tc.body):
			t.Errorf("%d header bytes, body %q: %+v %v", len(tc.header["A"][0]), tc.body, out, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("body %q: got %v, want %q", tc.body, err, tc.want)
		}
	}
}
