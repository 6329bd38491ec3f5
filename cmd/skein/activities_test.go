package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// Remote activities through real processes: skein serve, worker
// processes built from package worker, and the worker protocol.

const remoteWorkflows = "./testdata/workflows/remote"

var (
	toolMu    sync.Mutex
	toolBuilt = map[string]string{}
)

// buildTool builds the Go command at pkg (relative to the repository's
// root) for this machine, once per test binary, and returns its path.
func buildTool(t *testing.T, pkg string) string {
	t.Helper()
	toolMu.Lock()
	defer toolMu.Unlock()
	if p, ok := toolBuilt[pkg]; ok {
		return p
	}
	p := filepath.Join(filepath.Dir(skeinBin), strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "-"))
	cmd := exec.Command("go", "build", "-o", p, pkg)
	cmd.Dir = wasmbuild.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	toolBuilt[pkg] = p
	return p
}

// workerProc is a worker process and what it printed.
type workerProc struct {
	cmd    *exec.Cmd
	out    *lockedBuffer
	stderr *lockedBuffer
	exited chan struct{}
}

// startWorker starts bin with args; it is killed at the end of the test.
func startWorker(t *testing.T, bin string, args ...string) *workerProc {
	t.Helper()
	w := &workerProc{cmd: exec.Command(bin, args...), out: &lockedBuffer{}, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	w.cmd.Env = cleanEnv()
	w.cmd.Stderr = w.stderr
	pipe, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			fmt.Fprintln(w.out, sc.Text())
		}
		io.Copy(io.Discard, pipe)
		w.cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		w.kill()
		if t.Failed() {
			t.Logf("worker %s stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), w.out.String(), w.stderr.String())
		}
	})
	return w
}

func (w *workerProc) kill() {
	select {
	case <-w.exited:
		return
	default:
	}
	w.cmd.Process.Kill()
	<-w.exited
}

// lines returns the printed lines that start with prefix.
func (w *workerProc) lines(prefix string) []string {
	var out []string
	for l := range strings.Lines(w.out.String()) {
		if strings.HasPrefix(l, prefix) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// awaitLines waits until the worker printed at least n lines with prefix.
func (w *workerProc) awaitLines(t *testing.T, prefix string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for {
		ls := w.lines(prefix)
		if len(ls) >= n {
			return ls
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker printed %d %q lines after %v; want %d", len(ls), prefix, runWait, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOrderExample runs examples/order as docs/activities.md does:
// skein serve allowed to reach the shop's webhook, the example's worker
// process (which also receives the webhook's notifications), deploy,
// start, wait. The results, the recorded outcomes and the worker's own
// count of what it executed and received agree: each activity ran once
// per attempt the store records, each notification arrived once.
func TestOrderExample(t *testing.T) {
	t.Parallel()
	testOrderExample(t, func(server, hook string) *workerProc {
		return startWorker(t, buildTool(t, "./examples/order/worker"), "--server", server, "--id", "shop-1", "--webhook", hook)
	})
}

// testOrderExample is TestOrderExample with the worker process that
// startShop starts for the server's URL and the webhook's address (the
// Go worker, or the TypeScript one of examples/order/worker-ts).
func testOrderExample(t *testing.T, startShop func(server, hook string) *workerProc) {
	wasm := wasmbuild.Build(t, "./examples/order")
	hook := freePort(t)
	s := startServer(t, filepath.Join(t.TempDir(), "o.db"), nil, "--allow-http", hook)
	w := startShop(s.url, hook)
	awaitListening(t, hook, w)
	wantExit(t, s.cli(t, nil, "deploy", wasm, "--name", "order"), 0)
	orders := map[string]string{
		"o-1": `{"id":"o-1","item":"book","qty":2,"card":"visa","notify":"http://` + hook + `/orders"}`,
		"o-2": `{"id":"o-2","item":"book","qty":1,"card":"flaky","notify":"http://` + hook + `/orders"}`,
		"o-3": `{"id":"o-3","item":"lamp","qty":1,"card":"declined","notify":"http://` + hook + `/orders"}`,
	}
	for id, in := range orders {
		wantExit(t, s.cli(t, nil, "start", "order", "--id", id, "--input", in), 0)
	}
	r := s.cli(t, nil, "wait", "o-1", "--quiet")
	wantExit(t, r, 0, `{"order":"o-1","reservation":"res-o-1.1","receipt":"rcpt-o-1.2"}`)
	r = s.cli(t, nil, "wait", "o-2", "--quiet")
	wantExit(t, r, 0, `{"order":"o-2","reservation":"res-o-2.1","receipt":"rcpt-o-2.2"}`)
	r = s.cli(t, nil, "wait", "o-3", "--quiet")
	wantExit(t, r, 1, "charge failed: card declined; reservation res-o-3.1 released")

	wantCalls := map[string][]string{ // function and attempts, in settle order
		"o-1": {"reserve-stock 1", "charge 1", "skein.http 1"},
		"o-2": {"reserve-stock 1", "charge 2", "skein.http 1"},
		"o-3": {"reserve-stock 1", "charge 1", "release-stock 1", "skein.http 1"},
	}
	for id, want := range wantCalls {
		var got []string
		for _, o := range s.outcomes(t, id, "").Outcomes {
			got = append(got, fmt.Sprintf("%s %d", o.Function, o.Attempts))
		}
		if !slices.Equal(got, want) {
			t.Errorf("run %s recorded %q; want %q", id, got, want)
		}
	}
	// The worker's lines: one per attempt and per notification, none repeated.
	printed := w.lines("")
	slices.Sort(printed)
	want := []string{"charge o-1 attempt 1", "charge o-2 attempt 1", "charge o-2 attempt 2", "charge o-3 attempt 1",
		"notified o-1 placed", "notified o-2 placed", "notified o-3 canceled",
		"release-stock res-o-3.1 attempt 1", "reserve-stock o-1 attempt 1", "reserve-stock o-2 attempt 1", "reserve-stock o-3 attempt 1"}
	if !slices.Equal(printed, want) {
		t.Errorf("the worker executed and received %q; want %q", printed, want)
	}
}

// awaitListening waits until the worker w listens on addr (its webhook).
func awaitListening(t *testing.T, addr string, w *workerProc) {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-w.exited:
			t.Fatalf("the worker exited before it listened on %s; stderr:\n%s", addr, w.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker does not listen on %s after %v: %v", addr, runWait, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago, for a
// server that must come back at the same address after a restart.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
