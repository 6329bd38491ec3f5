package main

// End-to-end test of `skein serve --store postgres://...`: the server on a
// schema of its own in $SKEIN_TEST_POSTGRES runs workflows to completion,
// and a second server on the same schema finds them.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresSchema creates a schema with a random name in the database of
// $SKEIN_TEST_POSTGRES, drops it when the test ends, and returns a URL
// whose search_path selects it. Without the variable the test is skipped,
// or fails when $SKEIN_REQUIRE_POSTGRES is 1 (as in CI).
func postgresSchema(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("SKEIN_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("SKEIN_REQUIRE_POSTGRES") == "1" {
			t.Fatal("SKEIN_TEST_POSTGRES is not set but SKEIN_REQUIRE_POSTGRES=1: set it to a postgres:// URL (.ci/run starts a cluster)")
		}
		t.Skip("SKEIN_TEST_POSTGRES is not set (a postgres:// URL of a scratch database); skipping the Postgres test")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "skein_cli_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to SKEIN_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("SKEIN_TEST_POSTGRES must be a postgres:// URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// startPostgresServer starts `skein serve --store dsn --addr 127.0.0.1:0`,
// as startServer does with --db.
func startPostgresServer(t *testing.T, dsn string) *skeinServer {
	t.Helper()
	return startServe(t, []string{"--store", dsn}, nil, "--poll", "50ms")
}

func TestServePostgres(t *testing.T) {
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
	dir := t.TempDir()
	wantExit(t, skein(t, dir, "serve", "--store", "postgres://127.0.0.1:1/x", "--db", "x.db"), exitUsage, "exclude")
	wantExit(t, skein(t, dir, "serve", "--store", "mysql://127.0.0.1/x"), exitUsage, "postgres://")
}
