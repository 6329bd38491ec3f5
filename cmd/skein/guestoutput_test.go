package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/guestbuild"
)

// The C race writes "race: an execution starts" to stdout at every
// execution and "race: done" to stderr at its end (testdata/c/race.c).
const (
	raceStarts = "race: an execution starts"
	raceDone   = "race: done"
)

// skein run --guest-output passes the module's stdout and stderr through
// to skein's stderr, each line prefixed with the run id, on every
// execution (the replay too); without the flag nothing is shown.
func TestRunGuestOutput(t *testing.T) {
	t.Parallel()
	wasm := guestbuild.C(t, "testdata/c/race.c")
	dir := t.TempDir()
	r := skein(t, dir, "run", wasm, "--db", filepath.Join(dir, "g.db"), "--id", "g1", "--evict", "always", "--guest-output")
	if r.code != 0 || !strings.Contains(r.stdout, `["s2:slow-result","f2:fast-result"]`) {
		t.Fatalf("%s", r)
	}
	if n := strings.Count(r.stderr, "[g1] "+raceStarts+"\n"); n != 2 {
		t.Fatalf("want the start line from both executions (live and replay), got %d\n%s", n, r)
	}
	if n := strings.Count(r.stderr, "[g1] "+raceDone+"\n"); n != 1 {
		t.Fatalf("want the stderr line once, got %d\n%s", n, r)
	}
	if strings.Contains(r.stdout, raceStarts) {
		t.Fatalf("guest output on skein's stdout:\n%s", r)
	}
	r = skein(t, dir, "run", wasm, "--db", filepath.Join(dir, "g.db"), "--id", "g2")
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, raceStarts) || strings.Contains(r.stdout+r.stderr, raceDone) {
		t.Fatalf("without --guest-output the guest's output shows:\n%s", r)
	}
}

// skein check --guest-output prefixes each line with the id of the
// checked schedule's run.
func TestCheckGuestOutput(t *testing.T) {
	t.Parallel()
	wasm := guestbuild.C(t, "testdata/c/race.c")
	r := skein(t, "", "check", wasm, "--schedules", "2", "--quiet", "--guest-output")
	if r.code != 0 || !strings.Contains(r.stdout, "0 divergences") {
		t.Fatalf("%s", r)
	}
	for _, id := range []string{"s1", "s2"} {
		if !strings.Contains(r.stderr, "["+id+"] "+raceStarts+"\n") || !strings.Contains(r.stderr, "["+id+"] "+raceDone+"\n") {
			t.Fatalf("no output of run %s\n%s", id, r)
		}
	}
	r = skein(t, "", "check", wasm, "--schedules", "2", "--quiet")
	if strings.Contains(r.stdout+r.stderr, raceStarts) {
		t.Fatalf("without --guest-output the guest's output shows:\n%s", r)
	}
}

// skein serve logs guest output at debug level, with the run id.
func TestServeGuestOutputLog(t *testing.T) {
	t.Parallel()
	wasm := guestbuild.C(t, "testdata/c/race.c")
	s := startServer(t, filepath.Join(t.TempDir(), "s.db"), nil, "--log-level", "debug")
	wantExit(t, s.cli(t, nil, "deploy", wasm, "--name", "crace"), 0)
	wantExit(t, s.cli(t, nil, "start", "crace", "--id", "srv-g1"), 0, "srv-g1")
	s.awaitStatus(t, "srv-g1", "", "completed")
	deadline := time.Now().Add(cmdTimeout)
	for !strings.Contains(s.stderr.String(), `line="`+raceDone+`"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	log := s.stderr.String()
	for _, line := range []string{raceStarts, raceDone} {
		want := `level=DEBUG msg="guest output" run=srv-g1 line="` + line + `"`
		if !strings.Contains(log, want) {
			t.Fatalf("the log lacks %s\n%s", want, log)
		}
	}
	s.stop(t)
}
