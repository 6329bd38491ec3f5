package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/skeinrun/skein/store"
)

// TestBackgroundCheckpoint: with the writer's own automatic checkpoint
// raised to a 64 MiB safety net, the checkpoints keep the write-ahead log
// below it (about 16 MiB plus 50 ms of commits on a quiet machine, up to
// 45 MiB seen on a loaded one; without the writer's idle checkpoints it
// reaches the safety net) while 24 MiB of outcomes are committed one
// batch at a time, and every outcome reads back after the store is
// closed and opened again. The bound, 56 MiB, is what tells the two
// apart whatever the machine's load: a checkpoint ran before the net.
func TestBackgroundCheckpoint(t *testing.T) {
	ctx := context.Background()
	d, path := openFile(t, Options{})
	if _, _, err := d.CreateRun(ctx, store.Run{ID: "r", ModuleHash: "h", Workflow: "w"}); err != nil {
		t.Fatal(err)
	}
	const commits, size = 3000, 8 << 10
	value := append([]byte{'"'}, append(bytes.Repeat([]byte{'x'}, size), '"')...)
	var largest int64
	for i := range commits {
		o := store.Outcome{Key: fmt.Sprintf("k%d", i), Kind: "step", Function: "f", Status: store.OutcomeOK, Value: value, Attempts: 1, Seq: int64(i + 1)}
		if err := d.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{{RunID: "r", Outcome: o}}}); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path + "-wal"); err == nil {
			largest = max(largest, fi.Size())
		}
	}
	t.Logf("largest write-ahead log: %.1f MiB for %d MiB committed", float64(largest)/(1<<20), commits*size>>20)
	if largest > 56<<20 {
		t.Errorf("the write-ahead log reached %d bytes: the background checkpoints did not keep it small", largest)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	outs, err := d2.Outcomes(ctx, "r")
	if err != nil || len(outs) != commits || !bytes.Equal(outs[commits-1].Value, value) {
		t.Fatalf("after reopening: %d outcomes, %v", len(outs), err)
	}
}
