package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// TestSandboxEscape: workflow code cannot read host files, the
// environment or the network, and sees virtual time and seeded
// randomness; step bodies get the real clock and randomness, recorded.
func TestSandboxEscape(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	m := h.deploy(t, "./testdata/workflows/escape")
	ctx := context.Background()
	view := func(wf, id string, input ...string) map[string]string {
		t.Helper()
		in := "null"
		if len(input) > 0 {
			in = input[0]
		}
		r := h.runToEnd(t, m, wf, in, id)
		if r.Status != store.RunCompleted {
			t.Fatalf("%s: %s %q", wf, r.Status, r.Error)
		}
		var v map[string]string
		mustJSON(t, r.Result, &v)
		return v
	}

	f := view("files", "files")
	t.Logf("files: %v", f)
	if !strings.HasPrefix(f["read /etc/passwd"], "0 bytes, open /etc/passwd: ") {
		t.Errorf("read /etc/passwd: %s", f["read /etc/passwd"])
	}
	for _, k := range []string{"list /", "read ../etc/passwd", "write /tmp"} {
		if f[k] == "<nil>" {
			t.Errorf("%s succeeded", k)
		}
	}

	e := view("env", "env")
	if e["HOME"] != `"" false` || e["environ"] != "0" || e["args"] != "workflow" {
		t.Errorf("env: %v; want no HOME, an empty environment and args [workflow]", e)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	connected := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			connected <- c
		}
	}()
	n := view("network", "network", fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
	if n["dial"] == "<nil>" || n["accept"] != "0" {
		t.Errorf("network: %v; want the dial to fail and no socket to accept on", n)
	}
	select {
	case c := <-connected:
		c.Close()
		t.Errorf("the guest connected to the host's listener")
	case <-time.After(50 * time.Millisecond):
	}

	// The clock: workflow code reads virtual time, which does not move
	// while it computes; the step bodies read the real clock.
	before := time.Now()
	r := h.runToEnd(t, m, "clock", "null", "clock")
	if r.Status != store.RunCompleted {
		t.Fatalf("clock: %s %q", r.Status, r.Error)
	}
	var c struct {
		First, Second, Mono, Real1, Real2 int64
		Random, StepRandom                string
	}
	mustJSON(t, r.Result, &c)
	if c.First != c.Second || c.Mono != 0 || c.First != r.StartTime {
		t.Errorf("workflow code's clock moved or is not the run's start time %d: %+v", r.StartTime, c)
	}
	if c.Real1 < before.UnixNano() || c.Real2-c.Real1 < int64(20*time.Millisecond) || c.Real2 > time.Now().UnixNano() {
		t.Errorf("step bodies' real clock: %d, %d (test started at %d)", c.Real1, c.Real2, before.UnixNano())
	}
	// A replay (no body runs) reproduces everything, the real readings
	// and randomness of the step bodies included: they were recorded.
	rr, err := h.Replay(ctx, "clock")
	if err != nil {
		t.Fatal(err)
	}
	if rr.Status != store.RunCompleted || !jsonEqual(rr.Result, r.Result) {
		t.Errorf("replay: %s %s\nlive: %s", rr.Status, rr.Result, r.Result)
	}
	// Workflow randomness is seeded by the run: another run with the same
	// seed sees the same bytes, one with another seed other bytes.
	other := func(id string, seed uint64) string {
		r, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "clock", ID: id, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if r, err = h.Drive(ctx, r.ID, DriveOptions{WaitTimers: true}); err != nil || r.Status != store.RunCompleted {
			t.Fatalf("%s: %v %s %q", id, err, r.Status, r.Error)
		}
		var v struct{ Random string }
		json.Unmarshal(r.Result, &v)
		return v.Random
	}
	if a, b := other("seed42", 42), other("seed7", 7); a != c.Random || b == c.Random {
		t.Errorf("workflow randomness: seed 42 gave %s and %s, seed 7 %s", c.Random, a, b)
	}
}
