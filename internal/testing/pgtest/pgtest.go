// Package pgtest gives tests a Postgres schema of their own in the
// database named by $SKEIN_TEST_POSTGRES (.ci/run starts a throwaway
// cluster and sets it).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/internal/testing/testgroup"
)

// DSN returns $SKEIN_TEST_POSTGRES, the URL of a database the tests may
// create schemas in. Without it the test is skipped, or fails when
// $SKEIN_REQUIRE_POSTGRES is 1 (as in CI).
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("SKEIN_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("SKEIN_REQUIRE_POSTGRES") == "1" {
			t.Fatal("SKEIN_TEST_POSTGRES is not set but SKEIN_REQUIRE_POSTGRES=1: set it to a postgres:// URL (.ci/run starts a cluster)")
		}
		testgroup.Skip(t, "postgres", "SKEIN_TEST_POSTGRES=postgres://... of a scratch database (.ci/run starts a throwaway cluster)", "SKEIN_TEST_POSTGRES is not set")
	}
	return dsn
}

// Schema creates a schema with a random name (prefix + hex) in the test
// database, drops it when the test ends, and returns a URL whose
// search_path selects it.
func Schema(t testing.TB, prefix string) string {
	t.Helper()
	dsn := DSN(t)
	var b [6]byte
	rand.Read(b[:])
	schema := prefix + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to SKEIN_TEST_POSTGRES: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }() // a connection for the schema statements: their errors are checked
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer func() { _ = conn.Close(ctx) }() // a connection for the schema statements: their errors are checked
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
