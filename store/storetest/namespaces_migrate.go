package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/store"
)

// NamespacesSeedSQL fills a database whose schema predates the table
// namespaces (run it before that migration) with what namespace acme
// holds that the store's methods do not write yet: a declaration of
// namespace acme (the stores declare in default only so far) and a run
// acme/r1. A backend's test opens the store on it (which migrates it)
// and calls CheckNamespacesMigrated.
const NamespacesSeedSQL = `
INSERT INTO attr_decls (namespace, name, type, created_at) VALUES ('acme', 'x', 'int', 1);
INSERT INTO runs (id, module_hash, workflow, status, seed, created_at, updated_at) VALUES ('acme/r1', 'h', 'w', 'completed', 0, 1, 1);
`

// NamespacesMigration is the index, in a backend's migrations, of the one
// that creates the table namespaces.
func NamespacesMigration(t *testing.T, migrations []string) int {
	t.Helper()
	i := slices.IndexFunc(migrations, func(m string) bool { return strings.Contains(m, "CREATE TABLE namespaces") })
	if i < 0 {
		t.Fatal("no migration creates the table namespaces")
	}
	return i
}

// CheckNamespacesMigrated checks a store opened on a database seeded by
// NamespacesSeedSQL: namespace default exists, and a namespace acme
// created now is found holding the run and the declaration.
func CheckNamespacesMigrated(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	list, err := s.Namespaces(ctx)
	if err != nil || len(list) != 1 || list[0].Name != store.DefaultNamespace || list[0].Weight != 1 ||
		list[0].Retention != store.RetentionDefault || list[0].CreatedAt.IsZero() {
		t.Fatalf("Namespaces after the migration = %+v, %v; want default alone", list, err)
	}
	if _, err := s.CreateNamespace(ctx, store.Namespace{Name: "acme", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	err = s.DeleteNamespace(ctx, "acme")
	var inUse *store.NamespaceInUseError
	if !errors.As(err, &inUse) || inUse.Holds != (store.NamespaceContents{Runs: 1, AttrDecls: 1}) ||
		!strings.Contains(err.Error(), "namespace acme holds 1 run and 1 attribute declaration: delete them first") {
		t.Errorf("DeleteNamespace(acme) holding a run and a declaration: err = %v", err)
	}
}
