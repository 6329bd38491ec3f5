package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/internal/testing/pgtest"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/postgres"
	"github.com/skeinrun/skein/store/storetest"
)

// testDSN returns $SKEIN_TEST_POSTGRES or skips (see pgtest.DSN).
func testDSN(t *testing.T) string { return pgtest.DSN(t) }

// freshSchema returns a DSN selecting a new schema, dropped at the end.
func freshSchema(t *testing.T) string { return pgtest.Schema(t, "skein_test_") }

func open(t *testing.T, dsn string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestStore(t *testing.T) {
	testDSN(t)
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, freshSchema(t)) })
}

// TestConcurrentOpen opens one fresh schema from several goroutines at
// once: the advisory lock makes exactly one of them migrate, and all
// succeed.
func TestConcurrentOpen(t *testing.T) {
	dsn := freshSchema(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			db, err := postgres.Open(t.Context(), dsn, postgres.Options{})
			if err == nil {
				err = db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var count, max int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&count, &max); err != nil {
		t.Fatal(err)
	}
	if count != max || max < 1 {
		t.Errorf("schema_migrations holds %d rows up to version %d, want one row per version", count, max)
	}
}

// TestSchemaTooNew refuses a schema written by a newer skein.
func TestSchemaTooNew(t *testing.T) {
	dsn := freshSchema(t)
	open(t, dsn).Close()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `INSERT INTO schema_migrations (version) VALUES (1000)`); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(t.Context(), dsn, postgres.Options{})
	var tooNew *postgres.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Version != 1000 {
		t.Fatalf("Open of a newer schema: %v, want SchemaTooNewError for version 1000", err)
	}
}

// TestClosed checks that every method fails with ErrClosed after Close.
func TestClosed(t *testing.T) {
	ctx := t.Context()
	s := open(t, freshSchema(t))
	if _, _, err := s.CreateRun(ctx, store.Run{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	storetest.CheckClosed(t, s, postgres.ErrClosed)
}

// oldSchema makes a fresh schema of version v (its first v migrations)
// and returns its DSN and a connection to it for the test to fill.
func oldSchema(t *testing.T, v int) (string, *pgx.Conn) {
	t.Helper()
	dsn := freshSchema(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for i, m := range postgres.Migrations[:v] {
		if _, err := conn.Exec(ctx, m); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, i+1); err != nil {
			t.Fatal(err)
		}
	}
	return dsn, conn
}

// TestMigrationWaiting: a schema from before migration 3 with runs that a
// settlement or a cancellation waits for finds them due once opened.
func TestMigrationWaiting(t *testing.T) {
	ctx := t.Context()
	dsn, conn := oldSchema(t, 2)
	if _, err := conn.Exec(ctx, storetest.WaitingSeedSQL); err != nil {
		t.Fatal(err)
	}
	d, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	storetest.CheckWaitingMigrated(t, d)
}

// TestMigrationModuleNames: a schema from before migration 10, where a
// module had one name, keeps every name pointing at the module it named.
func TestMigrationModuleNames(t *testing.T) {
	ctx := t.Context()
	dsn, conn := oldSchema(t, 9)
	for _, m := range storetest.ModuleNamesSeed {
		if _, err := conn.Exec(ctx, `INSERT INTO modules (hash, name, bytes, abi_version, workflows, created_at, named_seq) VALUES ($1, $2, '', 1, '[]', 1, $3)`,
			m.Hash, m.Name, m.NamedSeq); err != nil {
			t.Fatal(err)
		}
	}
	d, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	storetest.CheckModuleNamesMigrated(t, d)
}

// TestUnavailable: a database that cannot be reached is reported as
// store.ErrUnavailable, which the API answers with 503.
func TestUnavailable(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2", postgres.Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open of a closed port: %v; want ErrUnavailable", err)
	}
	// The pool's connections carry a name of their own, so that cutting
	// them leaves alone the other tests sharing the server.
	dsn := freshSchema(t)
	app := fmt.Sprintf("skein_cut_%d", time.Now().UnixNano())
	st, err := postgres.Open(t.Context(), dsn+"&application_name="+app, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Every connection of the pool is cut from the server side: the next
	// call fails as unavailable, and the one after works again.
	conn, err := pgx.Connect(t.Context(), testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := st.Run(t.Context(), "warm"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND datname = current_database() AND application_name = $1`, app); err != nil {
		t.Fatal(err)
	}
	_, err = st.Run(t.Context(), "x")
	t.Logf("after the cut: %v", err)
	if err != nil && !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run on a cut connection: %v; want ErrUnavailable (or a fresh connection's ErrNotFound)", err)
	}
	if _, err := st.Run(t.Context(), "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run after reconnecting: %v; want ErrNotFound", err)
	}
}
