package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skeinrun/skein/store/sqlite"
)

// TestOpenConcurrently: stores opened at once on a new database (two
// `skein run` started together) all open: SQLite reports some conflicts
// of switching to WAL and migrating as busy at once, and Open retries
// them instead of failing (before: "database is locked (SQLITE_BUSY)" in
// about one database of twenty).
func TestOpenConcurrently(t *testing.T) {
	for range 40 {
		p := filepath.Join(t.TempDir(), "skein.db")
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				d, err := sqlite.Open(context.Background(), p, sqlite.Options{})
				if err != nil {
					t.Error(err)
					return
				}
				d.Close()
			})
		}
		wg.Wait()
	}
}
