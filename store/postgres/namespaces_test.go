package postgres_test

import (
	"testing"

	"github.com/skeinrun/skein/store/postgres"
	"github.com/skeinrun/skein/store/storetest"
)

// TestMigrationNamespaces: a schema from before the table namespaces has
// namespace default once opened, and what it held under a namespace's
// prefix counts against that namespace's delete.
func TestMigrationNamespaces(t *testing.T) {
	ctx := t.Context()
	dsn, conn := oldSchema(t, storetest.NamespacesMigration(t, postgres.Migrations))
	if _, err := conn.Exec(ctx, storetest.NamespacesSeedSQL); err != nil {
		t.Fatal(err)
	}
	d, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	storetest.CheckNamespacesMigrated(t, d)
}
