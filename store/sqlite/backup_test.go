package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skeinrun/skein/store"
)

// TestBackupWhileWriting: a backup taken while another goroutine commits
// one outcome after another holds a prefix of those commits, whole (every
// outcome it holds reads back as committed, and the runs are numbered
// without a gap), opens as a store, and reports what it holds; the writer
// is not held up by it.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	d, path := openFile(t, Options{})
	const runs = 40
	for i := range runs {
		if _, _, err := d.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r%02d", i), ModuleHash: "h", Workflow: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	pad := strings.Repeat("x", 4<<10)
	commit := func(i int) error {
		o := store.Outcome{Key: fmt.Sprintf("k%05d", i), Kind: "step", Function: "f", Status: store.OutcomeOK, Value: []byte(fmt.Sprintf(`"v%d%s"`, i, pad)), Attempts: 1, Seq: int64(i + 1)}
		return d.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{{RunID: fmt.Sprintf("r%02d", i%runs), Outcome: o}}})
	}
	const before = 1000 // committed before the backup starts: 4 MiB
	for i := range before {
		if err := commit(i); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	committed := before
	go func() {
		defer wg.Done()
		for i := before; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := commit(i); err != nil {
				t.Error(err)
				return
			}
			committed = i + 1
		}
	}()
	dst := filepath.Join(t.TempDir(), "copy.db")
	var calls int
	stats, err := Backup(ctx, path, dst, func(written, total int64) { calls++ })
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Runs != runs || stats.SchemaVersion != len(migrations) || stats.Bytes <= 0 {
		t.Errorf("stats = %+v; want %d runs, schema %d, some bytes", stats, runs, len(migrations))
	}
	c, err := Open(ctx, dst, Options{})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	defer c.Close()
	held := 0
	for i := range runs {
		got, err := c.Outcomes(ctx, fmt.Sprintf("r%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		held += len(got)
		for _, o := range got {
			var n int
			if _, err := fmt.Sscanf(o.Key, "k%05d", &n); err != nil || string(o.Value) != fmt.Sprintf(`"v%d%s"`, n, pad) {
				t.Errorf("backup outcome %s = %s", o.Key, o.Value)
			}
		}
	}
	if held < before {
		t.Errorf("the backup holds %d outcomes; %d were committed before it began", held, before)
	}
	for i := range held { // a prefix: outcome i is held for every i below the count
		r := fmt.Sprintf("r%02d", i%runs)
		if _, err := c.Outcome(ctx, r, fmt.Sprintf("k%05d", i)); err != nil {
			t.Errorf("the backup holds %d outcomes but not k%05d: %v", held, i, err)
			break
		}
	}
	t.Logf("the backup holds %d of %d commits; %d progress calls", held, committed, calls)
}

// TestBackupRefuses: the output file is never overwritten, the source
// must be a skein database, and a failed or canceled backup leaves no
// file behind.
func TestBackupRefuses(t *testing.T) {
	ctx := context.Background()
	_, path := openFile(t, Options{})
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists.db")
	if err := os.WriteFile(exists, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Backup(ctx, path, exists, nil); err == nil || !strings.Contains(err.Error(), "never overwrites") {
		t.Errorf("backup onto an existing file: %v", err)
	}
	if b, _ := os.ReadFile(exists); string(b) != "keep me" {
		t.Errorf("the existing file was changed: %q", b)
	}
	if _, err := Backup(ctx, filepath.Join(dir, "missing.db"), filepath.Join(dir, "a.db"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("backup of a missing file: %v", err)
	}
	plain := filepath.Join(dir, "plain.db")
	raw, err := sql.Open("sqlite", plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	_ = raw.Close()
	if _, err := Backup(ctx, plain, filepath.Join(dir, "b.db"), nil); err == nil || !strings.Contains(err.Error(), "no skein schema") {
		t.Errorf("backup of a database that is not skein's: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Backup(canceled, path, filepath.Join(dir, "c.db"), nil); err == nil {
		t.Error("a canceled backup succeeded")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range left {
		if b := filepath.Base(f); b != "exists.db" && !strings.HasPrefix(b, "plain.db") {
			t.Errorf("left behind: %s", b)
		}
	}
}
