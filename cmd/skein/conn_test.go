package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// openFiles counts the open file descriptors of the server process.
func (s *skeinServer) openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("open files of skein serve: %v", err)
	}
	return len(ents)
}

// fdSampler records the most files the server held open while it ran.
type fdSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	mu   sync.Mutex
	max  int
}

func sampleFiles(t *testing.T, s *skeinServer) *fdSampler {
	f := &fdSampler{stop: make(chan struct{})}
	pid := s.cmd.Process.Pid
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
				f.mu.Lock()
				f.max = max(f.max, len(ents))
				f.mu.Unlock()
			}
			select {
			case <-f.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return f
}

// peak stops the sampler and returns the most files seen open.
func (f *fdSampler) peak() int {
	close(f.stop)
	f.done.Wait()
	return f.max
}

// heldConn is a connection the test keeps open until the server closes it.
type heldConn struct {
	kind   string
	conn   net.Conn
	closed time.Duration // when the server closed it, from the start
	err    error         // why waiting for the close failed
	got    []byte        // what the server sent before closing it
}

// TestServeConnectionLimits: connections that never finish their
// headers, never finish their body, or stay idle after an answer are
// closed by the server's timeouts (a module upload by its own, longer
// one, with an answer naming the flag), and however many connections come, the
// server holds at most --max-connections of them (its open files stay
// bounded); once they are gone it serves again.
func TestServeConnectionLimits(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("counts the server's open files in /proc")
	}
	const (
		maxConns = 64
		perKind  = 15  // idle, slow-body, slow-upload and slow-header connections each
		flood    = 150 // connections that only connect
		slack    = 6   // files the server may open besides connections (logs, database, cache)
		// Each upload in flight is spooled to a temporary file (server
		// deploy): one more file per upload connection, bounded by the cap.
		spools = perKind
	)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--max-connections", fmt.Sprint(maxConns),
		"--read-header-timeout", "1s", "--request-timeout", "1s", "--idle-timeout", "1s", "--upload-timeout", "2500ms")
	hp := s.hostPort()
	oneShot := &http.Client{Timeout: cmdTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(what string) {
		t.Helper()
		resp, err := oneShot.Get(s.url + "/v1/runs")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d", what, resp.StatusCode)
		}
	}
	get("first request")
	time.Sleep(200 * time.Millisecond)
	base := s.openFiles(t)
	sampler := sampleFiles(t, s)
	start := time.Now()

	var held []*heldConn
	dial := func(kind, send string) *heldConn {
		t.Helper()
		c, err := net.DialTimeout("tcp", hp, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %s: %v", kind, err)
		}
		t.Cleanup(func() { c.Close() })
		h := &heldConn{kind: kind, conn: c}
		held = append(held, h)
		if send != "" {
			if _, err := io.WriteString(c, send); err != nil {
				t.Fatalf("%s: write: %v", kind, err)
			}
		}
		return h
	}
	for range perKind {
		h := dial("idle", "GET /v1/runs HTTP/1.1\r\nHost: "+hp+"\r\n\r\n")
		h.conn.SetReadDeadline(time.Now().Add(cmdTimeout))
		br := bufio.NewReader(h.conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("idle connection: first answer: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("idle connection: HTTP %d, close %v; want 200, kept alive", resp.StatusCode, resp.Close)
		}
		h.conn = &bufConn{Conn: h.conn, r: br}
	}
	for range perKind {
		dial("slow-body", "POST /v1/runs HTTP/1.1\r\nHost: "+hp+"\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"module\":")
	}
	for range perKind {
		dial("slow-upload", "POST /v1/modules?name=slow HTTP/1.1\r\nHost: "+hp+"\r\nContent-Type: application/wasm\r\nContent-Length: 100000\r\n\r\n\x00asm")
	}
	for range perKind {
		dial("slow-header", "GET /v1/runs HTTP/1.1\r\nHost: "+hp+"\r\nX-Slow: ")
	}
	for range flood {
		dial("flood", "")
	}
	if n := s.openFiles(t); n > base+maxConns+spools+slack {
		t.Errorf("with %d connections held the server has %d files open; want at most %d (%d before, cap %d, %d spooled uploads)", len(held), n, base+maxConns+spools+slack, base, maxConns, spools)
	}

	// Wait for the server to close each connection.
	var wg sync.WaitGroup
	for _, h := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.conn.SetReadDeadline(start.Add(20 * time.Second))
			h.got, h.err = io.ReadAll(h.conn)
			h.closed = time.Since(start)
		}()
	}
	wg.Wait()
	latest := map[string]time.Duration{}
	for _, h := range held {
		if h.err != nil {
			t.Errorf("a %s connection was not closed by the server: %v", h.kind, h.err)
			continue
		}
		latest[h.kind] = max(latest[h.kind], h.closed)
		// A body that does not arrive in time is answered before the close.
		if h.kind == "slow-body" && (!strings.HasPrefix(string(h.got), "HTTP/1.1 408") || !strings.Contains(string(h.got), "--request-timeout")) {
			t.Errorf("a slow-body connection got %q before the close; want 408 naming --request-timeout", h.got)
		}
		// An upload has its own, longer deadline.
		if h.kind == "slow-upload" && (h.closed < 2*time.Second || !strings.HasPrefix(string(h.got), "HTTP/1.1 400") || !strings.Contains(string(h.got), "--upload-timeout")) {
			t.Errorf("a slow upload was closed after %v with %q; want 400 naming --upload-timeout after its 2.5s", h.closed, h.got)
		}
	}
	// The first 60 were accepted at once: their timeouts (1s, 2.5s) end
	// them well within 6s even on a loaded machine.
	for _, k := range []string{"idle", "slow-body", "slow-upload", "slow-header"} {
		if latest[k] > 6*time.Second {
			t.Errorf("the last %s connection was closed %v after the start; want the 1s timeout to end it", k, latest[k])
		}
	}
	t.Logf("closed by: %v; files open before %d, at most %d", latest, base, sampler.peak())
	if p := sampler.max; p > base+maxConns+spools+slack {
		t.Errorf("the server held %d files open at the peak; want at most %d (%d before, cap %d, %d spooled uploads)", p, base+maxConns+spools+slack, base, maxConns, spools)
	}
	get("a request after the flood")
	time.Sleep(200 * time.Millisecond)
	if n := s.openFiles(t); n > base+slack {
		t.Errorf("after every connection closed the server has %d files open; %d before", n, base)
	}
	if out := s.stderr.String(); strings.Contains(out, "too many open files") {
		t.Errorf("the server ran out of files:\n%s", out)
	}
	s.stop(t)
}

// bufConn reads through the buffered reader that read the first answer.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }
