package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/store"
)

// WaitingSeedSQL fills a database whose schema predates runs.waiting
// (SQLite before migration 5, Postgres before migration 3) with suspended
// runs: "s" has an undelivered settlement, "c" an undelivered
// cancellation, "d" a delivered settlement, "n" nothing. A backend's test
// runs it on such a database, opens the store (which migrates it) and
// calls CheckWaitingMigrated.
const WaitingSeedSQL = `
INSERT INTO runs (id, module_hash, workflow, status, seed, wake_at, cancel, created_at, updated_at) VALUES
	('s', 'h', 'w', 'suspended', 0, 0, '', 1, 1),
	('c', 'h', 'w', 'suspended', 0, 0, 'stop', 1, 1),
	('d', 'h', 'w', 'suspended', 0, 0, '', 1, 1),
	('n', 'h', 'w', 'suspended', 0, 0, '', 1, 1);
INSERT INTO outcomes (run_id, key, kind, function, status, updated_at) VALUES
	('s', 'p', 'promise', 'promise', 'pending', 1),
	('d', 'p', 'promise', 'promise', 'ok', 1);
INSERT INTO settlements (run_id, key, status, created_at) VALUES
	('s', 'p', 'ok', 1),
	('d', 'p', 'ok', 1);
`

// CheckWaitingMigrated checks that the runs of WaitingSeedSQL that
// something waits for are due after the migration, and only those.
func CheckWaitingMigrated(t *testing.T, s store.Store) {
	t.Helper()
	rs, err := s.DueRuns(t.Context(), 1_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := runIDs(rs); !slices.Equal(got, []string{"c", "s"}) {
		t.Errorf("DueRuns after the migration = %q, want [c s]", got)
	}
}

// ModuleNameSeed is a module of a database whose schema predates
// module_names (SQLite before migration 13, Postgres before migration
// 10), where a module had one name and named_seq ordered the modules
// stored under a name.
type ModuleNameSeed struct {
	Hash, Name string
	NamedSeq   int
}

// ModuleNamesSeed are the modules a backend's test stores in such a
// database before it opens the store (which migrates it) and calls
// CheckModuleNamesMigrated: "mod" was stored under h1 then h2, "other"
// under h3, and h4 has no name.
var ModuleNamesSeed = []ModuleNameSeed{{"h1", "mod", 1}, {"h2", "mod", 2}, {"h3", "other", 3}, {"h4", "", 0}}

// CheckModuleNamesMigrated checks that every name of ModuleNamesSeed
// still points at the module it named before the migration, that each
// module carries the names that point at it, and that h1 keeps "mod"
// among the names it was deployed under.
func CheckModuleNamesMigrated(t *testing.T, s store.Store) {
	t.Helper()
	for _, c := range []struct {
		key, hash       string
		names, deployed []string
	}{
		{"mod", "h2", []string{"mod"}, []string{"mod"}},
		{"other", "h3", []string{"other"}, []string{"other"}},
		{"h1", "h1", nil, []string{"mod"}},
		{"h4", "h4", nil, nil},
	} {
		m, err := s.ModuleInfo(t.Context(), c.key)
		if err != nil || m.Hash != c.hash || !slices.Equal(m.Names, c.names) || m.Name != strings.Join(c.names, "") || !slices.Equal(m.DeployedNames, c.deployed) {
			t.Errorf("ModuleInfo(%s) after the migration = %s named %q %q (deployed as %q), %v; want %s named %q (deployed as %q)",
				c.key, m.Hash, m.Name, m.Names, m.DeployedNames, err, c.hash, c.names, c.deployed)
		}
		if !slices.Equal(m.Namespaces, []string{store.DefaultNamespace}) {
			t.Errorf("ModuleInfo(%s) after the migration: Namespaces = %q; want [default] (every module stored before namespaces)", c.key, m.Namespaces)
		}
	}
}
