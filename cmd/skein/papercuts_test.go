package main

// Tests of rules at the edges of the API and the CLI found by the second
// attack round: reserved run ids, input bytes that are not UTF-8, a sleep
// past the last representable instant, messages with one prefix, the
// attempts column of skein inspect and a Postgres URL whose schema does
// not exist.

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestReservedRunIDs: a client cannot start a run with an id in the
// spaces of schedules (sched:) and webhooks (hook:), so it cannot take a
// schedule's slot or a delivery's run before it happens; a schedule's
// own runs still start.
func TestReservedRunIDs(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--poll", "50ms")
	deployServerModule(t, s, nil)
	for _, id := range []string{"sched:daily@2030-01-01T07:00:00Z", "hook:h:0123456789abcdef0123456789abcdef"} {
		r := s.call(t, "POST", "/v1/runs", "", `{"module":"srv","workflow":"echo","input":1,"id":"`+id+`"}`)
		wantErr(t, "start "+id, r, 400, "bad_request", "reserved for the runs schedules and webhooks start")
		if g := s.call(t, "GET", "/v1/runs/"+id, "", nil); g.status != 404 {
			t.Errorf("GET %s after a refused start: %s; want 404", id, g)
		}
	}
	wantExit(t, s.cli(t, nil, "schedule", "create", "often", "--cron", "@every 1h", "--module", "srv", "--workflow", "echo", "--input", "1"), 0)
	wantExit(t, s.cli(t, nil, "schedule", "trigger", "often"), 0, "sched:often@trigger-")
}

// TestInputNotUTF8: a run input whose bytes are not UTF-8 is refused with
// 400 and no run is created; before, it was stored and served back, and
// GET /v1/runs was then not valid JSON.
func TestInputNotUTF8(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	deployServerModule(t, s, nil)
	r := s.call(t, "POST", "/v1/runs", "", "{\"module\":\"srv\",\"workflow\":\"echo\",\"input\":\"\xff\",\"id\":\"raw\"}")
	wantErr(t, "start with raw bytes", r, 400, "bad_request", "input is not valid JSON in UTF-8")
	if g := s.call(t, "GET", "/v1/runs/raw", "", nil); g.status != 404 {
		t.Errorf("GET the refused run: %s; want 404", g)
	}
	list := s.call(t, "GET", "/v1/runs", "", nil)
	decodeJSON[struct {
		Runs []apiRun `json:"runs"`
		Next string   `json:"next_cursor"`
	}](t, "GET /v1/runs", list.body)
}

// TestSleepPastTheLastInstant: a sleep whose end is past the last instant
// an int64 of nanoseconds holds (2262-04-11) waits until then; before,
// the deadline wrapped around into the past and the timer fired at once.
func TestSleepPastTheLastInstant(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "sleeper", "--input", `{"ms":7884000000000}`, "--id", "long-nap"), 0)
	run := s.awaitStatus(t, "long-nap", "", "suspended", "completed")
	if run.Status != "suspended" {
		t.Fatalf("long-nap: %s (%s); want suspended on its timer", run.Status, run.Result)
	}
	st := s.cli(t, nil, "status", "long-nap")
	wantExit(t, st, 0, "2262-04-11")
}

// TestMessagesHaveOnePrefix: the CLI prints a refused start or
// settlement as "skein start: RULE", not "skein start: start: RULE:
// invalid request".
func TestMessagesHaveOnePrefix(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	deployServerModule(t, s, nil)
	r := s.cli(t, nil, "start", "srv", "--workflow", "echo", "--input", "1", "--id", "bad id")
	wantExit(t, r, exitFailed, `skein start: run id "bad id" has " " at byte 3`)
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--input", "{}", "--id", "w1"), 0)
	s.awaitOutcome(t, "w1", "approve")
	r2 := s.cli(t, nil, "resolve", "w1.approve", "--value", "5")
	wantExit(t, r2, exitFailed, "skein resolve: the value does not have the expected shape")
	for _, r := range []result{r, r2} {
		if strings.Contains(r.stderr, "start: start:") || strings.Contains(r.stderr, "resolve: resolve") || strings.Contains(r.stderr, "invalid request") {
			t.Errorf("a prefix is doubled, or the message ends in the kind of error:\n%s", r.stderr)
		}
	}
}

// TestInspectShowsAttempts: skein inspect's table has the attempts of
// each op, as docs/workflows.md says: a step retried twice shows 3.
func TestInspectShowsAttempts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "skein.db")
	wasm := wasmbuild.Build(t, "./examples/saga")
	skein(t, dir, "run", wasm, "--db", db, "--id", "saga-1", "--input", `{"trip":"lisbon","card":"declined"}`)
	r := skein(t, dir, "inspect", "saga-1", "--db", db)
	var header, charge string
	for _, l := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.HasPrefix(l, "KEY"):
			header = l
		case strings.Contains(l, " charge-card "):
			charge = l
		}
	}
	if !strings.Contains(header, "ATTEMPTS") || charge == "" {
		t.Fatalf("inspect has no attempts column, or no charge op:\n%s", r)
	}
	col := strings.Index(header, "ATTEMPTS")
	if f := strings.Fields(charge[col:]); len(f) == 0 || f[0] == "1" || f[0] == "0" {
		t.Errorf("the charge, retried by its policy, shows attempts %q; want more than 1:\n%s", f, r.stdout)
	}
}

// TestPostgresMissingSchema: a --store URL whose search_path names no
// schema that exists is refused at start with words that say what to do,
// not PostgreSQL's raw SQLSTATE 3F000.
func TestPostgresMissingSchema(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	missing := strings.Replace(dsn, "search_path=", "search_path=no_such_", 1)
	for _, args := range [][]string{
		{"serve", "--store", missing, "--addr", "127.0.0.1:0"},
		{"inspect", "any", "--store", missing},
	} {
		r, exited := skeinFor(t, 20*time.Second, args...)
		if !exited {
			t.Fatalf("skein %s did not exit", args[0])
		}
		wantExit(t, r, exitFailed, "no schema of the search_path exists", `no_such_`, "CREATE SCHEMA")
		if strings.Contains(r.stderr, "SQLSTATE 3F000") {
			t.Errorf("skein %s: the raw SQLSTATE is the message:\n%s", args[0], r.stderr)
		}
	}
}
