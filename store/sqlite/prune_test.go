package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// pragma reads an integer pragma of the database at path.
func pragma(t *testing.T, path, name string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int64
	if err := db.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

// fillRuns creates n completed runs, ended at time 1 (unix ns), each with
// an outcome of 16 KiB.
func fillRuns(t *testing.T, d *DB, prefix string, n int) {
	t.Helper()
	ctx := t.Context()
	value := []byte(`"` + strings.Repeat("x", 16<<10) + `"`)
	for i := range n {
		id := fmt.Sprintf("%s%03d", prefix, i)
		if _, _, err := d.CreateRun(ctx, store.Run{ID: id, ModuleHash: "h", Workflow: "w", Status: store.RunRunning}); err != nil {
			t.Fatal(err)
		}
		err := d.Commit(ctx, store.Batch{
			Outcomes: []store.RunOutcome{{RunID: id, Outcome: store.Outcome{Key: "1", Kind: "step", Function: "f", Status: store.OutcomeOK, Value: value, Seq: 1}}},
			Runs:     []store.Run{{ID: id, ModuleHash: "h", Status: store.RunCompleted, UpdatedAt: time.Unix(0, 1)}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestPruneFreesPages: a new database is in auto_vacuum INCREMENTAL, and
// a prune gives the pages it frees back (no free page is left in the
// file), so the file shrinks at the next checkpoint.
func TestPruneFreesPages(t *testing.T) {
	d, path := openFile(t, Options{})
	defer d.Close()
	if v := pragma(t, path, "auto_vacuum"); v != 2 {
		t.Fatalf("a new database's auto_vacuum = %d, want 2 (incremental)", v)
	}
	fillRuns(t, d, "r", 100)
	full := pragma(t, path, "page_count")
	res, err := d.PruneRuns(t.Context(), "", 2, 0, false)
	if err != nil || len(res.IDs) != 100 {
		t.Fatalf("PruneRuns = %d runs, %v; want 100", len(res.IDs), err)
	}
	free, pages := pragma(t, path, "freelist_count"), pragma(t, path, "page_count")
	t.Logf("pages: %d full, %d after the prune, %d free", full, pages, free)
	if free != 0 || pages > full/4 {
		t.Errorf("after the prune: %d pages (%d before), %d free; want the freed pages returned", pages, full, free)
	}
}

// TestVacuumSwitchesOldDatabase: a database made in auto_vacuum NONE (by
// an older skein) stays so when opened; Vacuum switches it, keeping its
// runs.
func TestVacuumSwitchesOldDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("CREATE TABLE x (a)"); err != nil { // the file exists in mode NONE
		t.Fatal(err)
	}
	if _, err := raw.Exec("DROP TABLE x"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	d, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fillRuns(t, d, "r", 20)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if v := pragma(t, path, "auto_vacuum"); v != 0 {
		t.Fatalf("an old database's auto_vacuum = %d after Open, want 0 (none)", v)
	}
	st, err := Vacuum(t.Context(), path)
	if err != nil || st.AutoVacuumBefore != "none" {
		t.Fatalf("Vacuum = %+v, %v; want it to switch a database in mode none", st, err)
	}
	if v := pragma(t, path, "auto_vacuum"); v != 2 {
		t.Fatalf("auto_vacuum after Vacuum = %d, want 2 (incremental)", v)
	}
	d, err = Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if rs, err := d.Runs(t.Context(), store.RunFilter{}); err != nil || len(rs) != 20 {
		t.Errorf("runs after Vacuum: %d, %v; want 20", len(rs), err)
	}
	if _, err := Vacuum(t.Context(), filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Error("Vacuum of a missing file: no error")
	}
}
