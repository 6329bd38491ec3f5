package postgres_test

// The differential test of store/storetest against SQLite.

import (
	"testing"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
	"github.com/skeinrun/skein/store/storetest"
)

// TestMatchesSQLite applies the same random operations to a Postgres store
// (a fresh schema per seed) and to an in-memory SQLite store and compares
// every answer, then the final state.
func TestMatchesSQLite(t *testing.T) {
	testDSN(t)
	storetest.Differential(t, "postgres", func(t *testing.T) store.Store { return open(t, freshSchema(t)) },
		"sqlite", func(t *testing.T) store.Store {
			db, err := sqlite.Open(t.Context(), ":memory:", sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return db
		})
}
