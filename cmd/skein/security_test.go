package main

// Tests of what a browser page, a DNS-rebinding page and a client without
// the token can do to a real `skein serve`: cross-site writes, foreign
// Host headers, listening beyond loopback without a token, and
// connections that are slow, idle or refused.

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// send sends one request with the headers hdr; a "Host" entry replaces
// the Host header (the connection still goes to the server's 127.0.0.1
// address).
func (s *skeinServer) send(t *testing.T, method, path string, hdr map[string]string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
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
	return reply{status: resp.StatusCode, body: data}
}

// hostPort is the server's host:port, as a browser puts it in Host.
func (s *skeinServer) hostPort() string { return strings.TrimPrefix(s.url, "http://") }

// wantErr checks an error answer's status, code, and that its message
// holds each of texts.
func wantErr(t *testing.T, what string, r reply, status int, code string, texts ...string) {
	t.Helper()
	want(t, what, r, status, code)
	for _, w := range texts {
		if !strings.Contains(r.errMessage(), w) {
			t.Errorf("%s: message %q lacks %q", what, r.errMessage(), w)
		}
	}
}

// TestServeRefusesCrossSiteWrites: without a token, what a web page on
// another origin can send (a "simple" request: text/plain or a form, any
// Origin, no preflight) is refused and changes nothing; the CLI's and the
// UI's own requests still work.
func TestServeRefusesCrossSiteWrites(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	hash := deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--input", "{}", "--id", "wait-1"), 0)
	s.awaitOutcome(t, "wait-1", "approve")
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/noisy"))
	if err != nil {
		t.Fatal(err)
	}
	start := []byte(`{"module":"srv","workflow":"echo","input":1,"id":"csrf-1"}`)
	evil := "http://evil.example"
	for _, c := range []struct {
		name, method, path string
		hdr                map[string]string
		body               []byte
		status             int
		code               string
		texts              []string
	}{
		{"start, text/plain, foreign Origin", "POST", "/v1/runs", map[string]string{"Content-Type": "text/plain", "Origin": evil}, start, 403, "forbidden", []string{evil}},
		{"start, text/plain", "POST", "/v1/runs", map[string]string{"Content-Type": "text/plain"}, start, 415, "unsupported_media_type", []string{"application/json"}},
		{"start, form", "POST", "/v1/runs", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, start, 415, "unsupported_media_type", []string{"application/json"}},
		{"start, no Content-Type", "POST", "/v1/runs", nil, start, 415, "unsupported_media_type", []string{"application/json"}},
		{"start, JSON, foreign Origin", "POST", "/v1/runs", map[string]string{"Content-Type": "application/json", "Origin": evil}, start, 403, "forbidden", nil},
		{"start, JSON, Origin null", "POST", "/v1/runs", map[string]string{"Content-Type": "application/json", "Origin": "null"}, start, 403, "forbidden", nil},
		{"start, JSON, Origin on another port", "POST", "/v1/runs", map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:1"}, start, 403, "forbidden", nil},
		{"upload, text/plain", "POST", "/v1/modules?name=evil", map[string]string{"Content-Type": "text/plain"}, wasm, 415, "unsupported_media_type", []string{"application/wasm", "application/octet-stream"}},
		{"upload, multipart", "POST", "/v1/modules?name=evil", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, wasm, 415, "unsupported_media_type", nil},
		{"upload, foreign Origin", "POST", "/v1/modules?name=evil", map[string]string{"Content-Type": "application/wasm", "Origin": evil}, wasm, 403, "forbidden", nil},
		{"upload, JSON", "POST", "/v1/modules?name=evil", map[string]string{"Content-Type": "application/json"}, wasm, 415, "unsupported_media_type", nil},
		{"settle, text/plain", "POST", "/v1/promises/wait-1.approve", map[string]string{"Content-Type": "text/plain"}, []byte(`{"value":"yes"}`), 415, "unsupported_media_type", nil},
		{"settle, foreign Origin", "POST", "/v1/promises/wait-1.approve", map[string]string{"Content-Type": "application/json", "Origin": evil}, []byte(`{"value":"yes"}`), 403, "forbidden", nil},
		{"cancel, no body, no Content-Type", "POST", "/v1/runs/wait-1/cancel", nil, nil, 415, "unsupported_media_type", nil},
		{"cancel, text/plain", "POST", "/v1/runs/wait-1/cancel", map[string]string{"Content-Type": "text/plain"}, []byte(`{"reason":"csrf"}`), 415, "unsupported_media_type", nil},
		{"read, foreign Origin", "GET", "/v1/runs", map[string]string{"Origin": evil}, nil, 403, "forbidden", nil},
	} {
		wantErr(t, c.name, s.send(t, c.method, c.path, c.hdr, c.body), c.status, c.code, c.texts...)
	}
	// Nothing was created, settled or canceled.
	r := s.call(t, "GET", "/v1/runs", "", nil)
	if l := decodeJSON[struct {
		Runs       []apiRun `json:"runs"`
		NextCursor string   `json:"next_cursor"`
	}](t, "runs", r.body); len(l.Runs) != 1 || l.Runs[0].ID != "wait-1" {
		t.Errorf("runs after the refused requests: %s; want only wait-1", r)
	}
	want(t, "the refused upload", s.call(t, "GET", "/v1/modules/evil", "", nil), 404, "not_found")
	if run := s.getRun(t, "wait-1", ""); run.Status != "suspended" || run.CancelReason != "" {
		t.Errorf("wait-1 after the refused requests: %+v; want suspended, not canceled", run)
	}
	if v := s.outcomes(t, "wait-1", ""); len(v.Outcomes) != 1 || v.Outcomes[0].Status != "pending" {
		t.Errorf("wait-1's promise after the refused requests: %+v; want pending", v.Outcomes)
	}

	// The UI's requests (same origin) and charset parameters are fine.
	same := "http://" + s.hostPort()
	want(t, "same-origin start", s.send(t, "POST", "/v1/runs", map[string]string{"Content-Type": "application/json; charset=utf-8", "Origin": same}, start), 201, "")
	want(t, "same-origin settle", s.send(t, "POST", "/v1/promises/wait-1.approve", map[string]string{"Content-Type": "application/json", "Origin": same}, []byte(`{"value":"yes"}`)), 200, "")
	want(t, "octet-stream upload", s.send(t, "POST", "/v1/modules?name=srv", map[string]string{"Content-Type": "application/octet-stream"}, mustRead(t, wasmbuild.Build(t, serverWorkflows))), 200, "")
	if m := decodeJSON[map[string]any](t, "modules", s.call(t, "GET", "/v1/modules/srv", "", nil).body); m["hash"] != hash {
		t.Errorf("module srv is %v; want %s", m["hash"], hash)
	}
	s.stop(t)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServeRefusesForeignHost: without a token, a request whose Host is
// not this server (a DNS-rebinding page: its own name, resolved to
// 127.0.0.1, same-origin to the browser) is refused, reads and writes
// alike; loopback names and --allow-host names pass. With a token the
// Host is not checked.
func TestServeRefusesForeignHost(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--allow-host", "skein.test, other.test")
	deployServerModule(t, s, nil)
	_, port, _ := net.SplitHostPort(s.hostPort())
	rebound := "rebind.example:" + port
	for _, c := range []struct {
		name, method, path string
		hdr                map[string]string
		body               []byte
	}{
		{"list runs", "GET", "/v1/runs", map[string]string{"Host": rebound}, nil},
		{"the UI", "GET", "/", map[string]string{"Host": rebound}, nil},
		{"metrics", "GET", "/metrics", map[string]string{"Host": rebound}, nil},
		{"start", "POST", "/v1/runs", map[string]string{"Host": rebound, "Origin": "http://" + rebound, "Content-Type": "application/json"},
			[]byte(`{"module":"srv","workflow":"echo","input":1,"id":"rebound-1"}`)},
		{"a name of this machine that is not loopback", "GET", "/v1/runs", map[string]string{"Host": "skein.internal:" + port}, nil},
	} {
		r := s.send(t, c.method, c.path, c.hdr, c.body)
		wantErr(t, c.name, r, 421, "misdirected_request", strings.Split(c.hdr["Host"], ":")[0], "--token")
	}
	want(t, "the rebound start created nothing", s.call(t, "GET", "/v1/runs/rebound-1", "", nil), 404, "not_found")
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port, "127.0.0.1", "skein.test:" + port, "other.test"} {
		want(t, "Host "+h, s.send(t, "GET", "/v1/runs", map[string]string{"Host": h}, nil), 200, "")
	}
	want(t, "start with Host localhost", s.send(t, "POST", "/v1/runs", map[string]string{"Host": "localhost:" + port, "Content-Type": "application/json"},
		[]byte(`{"module":"srv","workflow":"echo","input":1,"id":"local-1"}`)), 201, "")
	s.stop(t)

	// With a token, the token is the guard: any Host is served.
	const token = "s3cret"
	st := startServer(t, filepath.Join(t.TempDir(), "skein.db"), []string{"SKEIN_TOKEN=" + token})
	want(t, "foreign Host with the token", st.send(t, "GET", "/v1/runs", map[string]string{"Host": rebound, "Authorization": "Bearer " + token}, nil), 200, "")
	wantErr(t, "foreign Host without the token", st.send(t, "GET", "/v1/runs", map[string]string{"Host": rebound}, nil), 401, "unauthorized")
	st.stop(t)
}

// TestServeRefusesOpenListen: skein serve does not listen beyond loopback
// without a token unless --insecure-no-token says so. The addresses are
// refused before anything is bound; 192.0.2.1 (TEST-NET-1) is not an
// address of this machine, so the runs allowed to go on fail binding it
// and nothing ever listens beyond loopback.
func TestServeRefusesOpenListen(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	for _, addr := range []string{"192.0.2.1:0", "0.0.0.0:0", "[::]:0", ":0"} {
		t.Run(addr, func(t *testing.T) {
			r := skeinEnv(t, nil, "serve", "--db", db, "--addr", addr)
			wantExit(t, r, exitUsage, "--addr "+addr, "--token", "--insecure-no-token")
			if strings.Contains(r.stdout, "listening") {
				t.Errorf("skein serve listened:\n%s", r)
			}
		})
	}
	// A token, or --insecure-no-token, lets it go on to bind the address
	// (which fails here: it is not ours).
	for name, c := range map[string]struct {
		env  []string
		args []string
	}{
		"token":             {[]string{"SKEIN_TOKEN=s3cret"}, nil},
		"insecure-no-token": {nil, []string{"--insecure-no-token"}},
	} {
		r := skeinEnv(t, c.env, append([]string{"serve", "--db", db, "--addr", "192.0.2.1:0"}, c.args...)...)
		wantExit(t, r, exitFailed, "192.0.2.1")
		if strings.Contains(r.stderr, "--insecure-no-token") {
			t.Errorf("%s: refused for want of a token:\n%s", name, r)
		}
	}
}

// TestServeConnectionFlags: a connection limit cannot be turned off.
func TestServeConnectionFlags(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	wantExit(t, skeinEnv(t, nil, "serve", "--db", db, "--max-connections", "0"), exitUsage, "--max-connections 0: want at least 1")
	for _, f := range []string{"--read-header-timeout", "--request-timeout", "--upload-timeout", "--idle-timeout"} {
		wantExit(t, skeinEnv(t, nil, "serve", "--db", db, f, "0s"), exitUsage, f+" 0s: want a positive duration")
	}
}

// rawConn is a TCP connection to the server, for requests that a
// well-behaved client would not send.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func (s *skeinServer) dial(t *testing.T) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", s.hostPort())
	if err != nil {
		t.Fatalf("dial %s: %v", s.hostPort(), err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, br: bufio.NewReader(c)}
}

// request writes raw and reads one answer.
func (c *rawConn) request(t *testing.T, raw string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(cmdTimeout))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("read the answer to %q: %v", raw, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("read the body of the answer to %q: %v", raw, err)
	}
	resp.Body.Close()
	return resp
}

// TestServe401ClosesConnection: a request refused for want of the token
// is answered with Connection: close and the server closes the
// connection, so unauthenticated clients cannot keep connections open;
// with the token, keep-alive works.
func TestServe401ClosesConnection(t *testing.T) {
	t.Parallel()
	const token = "s3cret"
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), []string{"SKEIN_TOKEN=" + token})
	hp := s.hostPort()
	for _, raw := range []string{
		"GET /v1/runs HTTP/1.1\r\nHost: " + hp + "\r\n\r\n",
		"GET /v1/runs HTTP/1.1\r\nHost: " + hp + "\r\nAuthorization: Bearer wrong\r\n\r\n",
		"POST /v1/runs HTTP/1.1\r\nHost: " + hp + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	} {
		c := s.dial(t)
		resp := c.request(t, raw)
		if resp.StatusCode != 401 || !resp.Close {
			t.Errorf("%q: HTTP %d, Connection %q; want 401 with Connection: close", raw, resp.StatusCode, resp.Header.Get("Connection"))
		}
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, err := c.br.Read(make([]byte, 1))
		if err != io.EOF {
			t.Errorf("%q: after the 401 the connection is still open (read %d, %v); want it closed by the server", raw, n, err)
		}
	}
	c := s.dial(t)
	for i := range 2 {
		resp := c.request(t, "GET /v1/runs HTTP/1.1\r\nHost: "+hp+"\r\nAuthorization: Bearer "+token+"\r\n\r\n")
		if resp.StatusCode != 200 || resp.Close {
			t.Errorf("request %d with the token on one connection: HTTP %d, close %v; want 200 and keep-alive", i, resp.StatusCode, resp.Close)
		}
	}
	s.stop(t)
}
