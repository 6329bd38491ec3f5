package main

// End-to-end test of `skein serve --store postgres://...`: the server on a
// schema of its own in $SKEIN_TEST_POSTGRES runs workflows to completion,
// and a second server on the same schema finds them.

import (
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/pgtest"
)

// postgresSchema returns a URL selecting a new schema of
// $SKEIN_TEST_POSTGRES, dropped at the end (see internal/testing/pgtest).
func postgresSchema(t *testing.T) string { return pgtest.Schema(t, "skein_cli_") }

// startPostgresServer starts `skein serve --store dsn --addr 127.0.0.1:0`,
// as startServer does with --db.
func startPostgresServer(t *testing.T, dsn string) *skeinServer {
	t.Helper()
	return startServe(t, []string{"--store", dsn}, nil, "--poll", "50ms")
}

func TestServePostgres(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	s := startPostgresServer(t, dsn)
	deployServerModule(t, s, nil)

	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "echo", "--input", `{"a":[1,2]}`, "--id", "echo-1"), 0)
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "parent", "--input", "7", "--id", "parent-1"), 0)
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--input", "{}", "--id", "wait-1"), 0)
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "sleeper", "--input", `{"ms":200}`, "--id", "sleep-1"), 0)
	s.awaitStatus(t, "wait-1", "", "suspended")
	wantExit(t, s.cli(t, nil, "resolve", "wait-1.approve", "--value", `"yes"`), 0)
	wantExit(t, s.cli(t, nil, "resolve", "wait-1.approve", "--value", `"again"`), exitFailed, "409")
	for id, res := range map[string]string{
		"echo-1":   `{"a":[1,2]}`,
		"parent-1": `50`,
		"wait-1":   `"approved: yes"`,
		"sleep-1":  `"slept 200ms"`,
	} {
		w := s.cli(t, nil, "wait", id, "--timeout", "20s")
		wantExit(t, w, 0)
		if !jsonEq(t, []byte(strings.TrimSpace(w.stdout)), res) {
			t.Errorf("%s: result %q; want %s", id, w.stdout, res)
		}
	}
	if c := s.getRun(t, "parent-1.1", ""); c.Parent != "parent-1" || c.Status != "completed" {
		t.Errorf("child run %+v; want completed, parent parent-1", c)
	}
	if !strings.Contains(s.stderr.String(), "search_path") || strings.Contains(s.stderr.String(), "skein.db") {
		t.Errorf("skein serve's log does not name the Postgres store:\n%s", s.stderr.String())
	}
	s.stop(t)

	// A second server on the same schema finds everything.
	s2 := startPostgresServer(t, dsn)
	if v := s2.outcomes(t, "sleep-1", ""); v.Status != "completed" || len(v.Outcomes) != 2 {
		t.Errorf("sleep-1 after a restart: %s with %d outcomes; want completed with 2", v.Status, len(v.Outcomes))
	}
	s2.stop(t)
}

// TestServeStoreFlags: --store takes a postgres:// URL and excludes --db.
func TestServeStoreFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wantExit(t, skein(t, dir, "serve", "--store", "postgres://127.0.0.1:1/x", "--db", "x.db"), exitUsage, "exclude")
	wantExit(t, skein(t, dir, "serve", "--store", "mysql://127.0.0.1/x"), exitUsage, "postgres://")
}
