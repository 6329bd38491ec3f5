package storetest

import (
	"slices"
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
