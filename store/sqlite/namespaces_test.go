package sqlite

import (
	"testing"

	"github.com/skeinrun/skein/store/storetest"
)

// TestMigrationNamespaces: a database from before the table namespaces
// has namespace default once opened, and what it held under a namespace's
// prefix counts against that namespace's delete.
func TestMigrationNamespaces(t *testing.T) {
	path, raw := oldDatabase(t, storetest.NamespacesMigration(t, migrations))
	if _, err := raw.Exec(storetest.NamespacesSeedSQL); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	d, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	storetest.CheckNamespacesMigrated(t, d)
}
