package main

// End-to-end tests of a damaged or full SQLite database under the real
// skein binary: a file with garbage pages is refused at start, and a
// full database (a real full disk on a tmpfs, or the --db-max-bytes cap)
// answers 507 naming the file, backs off the runs whose commits fail
// instead of retrying them in a loop, and the runs resume once there is
// room again.

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// damagePages overwrites with random bytes the root page of the outcomes
// table of the SQLite file at path.
func damagePages(t *testing.T, path string) {
	t.Helper()
	db, err := openRO(path)
	if err != nil {
		t.Fatal(err)
	}
	var pageSize int64
	roots := map[string]int64{}
	if err := db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT name, rootpage FROM sqlite_master WHERE name = 'outcomes'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var root int64
		if err := rows.Scan(&name, &root); err != nil {
			t.Fatal(err)
		}
		roots[name] = root
	}
	rows.Close()
	db.Close()
	if len(roots) != 1 {
		t.Fatalf("root pages %v; want that of outcomes", roots)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, root := range roots {
		garbage := make([]byte, pageSize)
		rand.Read(garbage)
		if _, err := f.WriteAt(garbage, (root-1)*pageSize); err != nil {
			t.Fatal(err)
		}
	}
}

// skeinFor runs skein with args and kills it after d: for commands that
// should exit at once but might serve forever.
func skeinFor(t *testing.T, d time.Duration, args ...string) (result, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, skeinBin, args...)
	cmd.Dir, cmd.Env = t.TempDir(), cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	}
	return r, ctx.Err() == nil
}

// TestDamagedDatabase: skein serve and skein run refuse a SQLite file
// with garbage pages, with a message that names the file and says to
// restore it; --skip-integrity-check opens it anyway.
func TestDamagedDatabase(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "damaged database files of many kinds (about 13 s)")
	wasm := wasmbuild.Build(t, lotteryWorkflows)
	dir := t.TempDir()
	db := filepath.Join(dir, "skein.db")
	for i := range 3 {
		wantExit(t, skein(t, dir, "run", wasm, "--db", db, "--id", fmt.Sprint("d", i), "--input", `{"n":3,"ms":1}`), 0)
	}
	damagePages(t, db)

	serve, exited := skeinFor(t, 10*time.Second, "serve", "--db", db, "--addr", "127.0.0.1:0")
	if !exited {
		t.Errorf("skein serve started on a damaged database and served for 10s\n%s", serve)
	}
	run, _ := skeinFor(t, 10*time.Second, "run", wasm, "--db", db, "--id", "d9", "--input", `{"n":1,"ms":1}`)
	for _, r := range []result{serve, run} {
		wantExit(t, r, exitFailed, "database "+db+" is damaged", "quick_check", "restore it from a backup", "--skip-integrity-check")
	}

	// Forced open, the damaged pages answer 500s, and a new run, whose
	// commits fail on them, is driven again after a backoff, not in a loop.
	s := startServer(t, db, nil, "--skip-integrity-check", "--poll", "50ms")
	if r := s.call(t, "GET", "/v1/runs/d1/outcomes", "", nil); r.status != 500 {
		t.Errorf("GET the outcomes on damaged pages with --skip-integrity-check: %s; want 500", r)
	}
	data, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "name the module", s.call(t, "POST", "/v1/modules?name=lottery", "", data), 200, "") // deployed by skein run
	want(t, "start", s.call(t, "POST", "/v1/runs", "", map[string]any{
		"module": "lottery", "workflow": "lottery", "input": map[string]int{"n": 3, "ms": 1}, "id": "big"}), 201, "")
	deadline := time.Now().Add(runWait)
	for failedDrives(s.stderr.String()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no drive of run big failed in %v:\n%s", runWait, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(4 * time.Second)
	if n := failedDrives(s.stderr.String()); n < 2 || n > 4 {
		t.Errorf("%d failed drives of run big logged in its first 4s; want 2 to 4 (at 0s, 1s, 3s)\n%s", n, tail(s.stderr.String(), 10))
	} else {
		t.Logf("%d failed drives of run big logged in its first 4s", n)
	}
	s.stop(t)
}

// TestFullDatabase fills the database two ways: with the --db-max-bytes
// cap (SQLite's max_page_count), and with a real full disk (a small tmpfs,
// when the test may mount one).
func TestFullDatabase(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "fills a database to its size limit and a tmpfs (about 20 s)")
	t.Run("db-max-bytes", func(t *testing.T) {
		dir := t.TempDir()
		testFullDatabase(t, dir, 1, func(db string, room int64) ([]string, func() []string) {
			st, err := os.Stat(db)
			if err != nil {
				t.Fatal(err)
			}
			return []string{"--db-max-bytes", fmt.Sprint(st.Size() + room)}, func() []string { return nil }
		})
	})
	t.Run("tmpfs", func(t *testing.T) {
		dir := t.TempDir()
		// Room for the database (4 MiB) and its write-ahead log once the
		// filler is gone: the log grows to about 16 MiB, and up to 64 MiB
		// while commits follow each other (store/sqlite/checkpoint.go). A
		// 24 MiB disk filled up again with the log of the run's recovery.
		if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=96m"); err != nil {
			t.Skipf("cannot mount a tmpfs to fill (needs root): %v; the db-max-bytes case covers SQLITE_FULL", err)
		}
		t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
		// On a full disk even the lease cannot be extended through the
		// backoff: it expires at its last renewal, up to --lease-ttl away.
		testFullDatabase(t, dir, 0, func(db string, room int64) ([]string, func() []string) {
			var fs syscall.Statfs_t
			if err := syscall.Statfs(dir, &fs); err != nil {
				t.Fatal(err)
			}
			filler := filepath.Join(dir, "filler")
			if err := os.WriteFile(filler, make([]byte, int64(fs.Bavail)*fs.Bsize-room), 0o600); err != nil {
				t.Fatal(err)
			}
			return nil, func() []string { os.Remove(filler); return nil }
		})
	})
}

// testFullDatabase deploys the server workflows on a database in dir,
// then restarts the server with what fill returns (flags) after it made
// the database full but for some room, starts a run that needs more,
// and checks: the run's failing drives back off (a handful of failures in
// 4s, each logged once, not one every few milliseconds); a start that
// does not fit answers 507 naming the file; once free makes room (and the
// server restarts, if free returns flags for it) the run completes.
func testFullDatabase(t *testing.T, dir string, minFailures int, fill func(db string, room int64) (flags []string, free func() []string)) {
	db := filepath.Join(dir, "skein.db")
	data, err := os.ReadFile(wasmbuild.Build(t, serverWorkflows))
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, db, nil, "--poll", "50ms")
	want(t, "deploy", s.call(t, "POST", "/v1/modules?name=srv", "", data), 201, "")
	s.stop(t)

	flags, free := fill(db, 256<<10)
	s = startServer(t, db, nil, append([]string{"--poll", "50ms", "--max-retry-backoff", "2s"}, flags...)...)
	const n = 3000 // about 500 KiB of outcomes
	want(t, "start big", s.call(t, "POST", "/v1/runs", "", map[string]any{
		"module": "srv", "workflow": "chain", "input": map[string]int{"n": n, "ms": 0}, "id": "big"}), 201, "")
	deadline := time.Now().Add(runWait)
	for !strings.Contains(s.stderr.String(), `run=big`) || !strings.Contains(s.stderr.String(), "full") {
		if time.Now().After(deadline) {
			t.Fatalf("no commit of run big failed for lack of space in %v:\n%s", runWait, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := failedDrives(s.stderr.String())
	time.Sleep(4 * time.Second)
	during := failedDrives(s.stderr.String()) - before
	if during < minFailures || during > 4 {
		t.Errorf("%d failed drives of run big logged in 4s; want %d to 4 (backoff 1s, 2s, 2s)\n%s", during, minFailures, tail(s.stderr.String(), 20))
	}
	t.Logf("%d failed drives of run big logged in 4s", during)

	big := strings.Repeat("x", 400<<10)
	r := s.call(t, "POST", "/v1/runs", "", map[string]any{"module": "srv", "workflow": "echo", "input": big, "id": "huge"})
	want(t, "start a run that does not fit", r, 507, "insufficient_storage")
	if !strings.Contains(r.errMessage(), db) || !strings.Contains(r.errMessage(), "full") {
		t.Errorf("507 message %q does not name the database %s and say it is full", r.errMessage(), db)
	}

	if restart := free(); restart != nil || len(flags) > 0 {
		s.stop(t)
		s = startServer(t, db, nil, append([]string{"--poll", "50ms"}, restart...)...)
	}
	done := s.awaitStatus(t, "big", "", "completed")
	if !jsonEq(t, done.Result, fmt.Sprint(n*(n+1)/2)) {
		t.Errorf("run big: result %s; want %d", done.Result, n*(n+1)/2)
	}
	v := s.outcomes(t, "big", "")
	for _, o := range v.Outcomes {
		if o.Status != "ok" || string(o.Value) != o.Key {
			t.Errorf("outcome %s: %s %s; want ok %s", o.Key, o.Status, o.Value, o.Key)
			break
		}
	}
	if len(v.Outcomes) != n {
		t.Errorf("run big has %d outcomes; want %d", len(v.Outcomes), n)
	}
	s.stop(t)
}

// failedDrives counts the log lines of failed drives of run big.
func failedDrives(log string) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `msg="drive run`) && strings.Contains(line, "run=big") {
			n++
		}
	}
	return n
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
