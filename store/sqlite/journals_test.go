package sqlite

import (
	"errors"
	"slices"
	"testing"

	"github.com/skeinrun/skein/store"
)

// TestApplyGroupJournalClosed: in one writer transaction, a batch that
// ends a run closes its journal for the batches after it, which are
// checked before the group is applied; the batches before it and the
// batch itself may write the run's outcomes.
func TestApplyGroupJournalClosed(t *testing.T) {
	d, _ := openFile(t, Options{})
	defer d.Close()
	ctx := t.Context()
	for _, id := range []string{"r1", "r2"} {
		if _, _, err := d.CreateRun(ctx, store.Run{ID: id, ModuleHash: "h", Workflow: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(b store.Batch) *request { return &request{ctx: ctx, batch: &b, done: make(chan error, 1)} }
	group := []*request{
		mk(store.Batch{Outcomes: outcomes("r1", "a", 0, 2)}),
		mk(store.Batch{Outcomes: outcomes("r1", "b", 2, 1), Runs: []store.Run{{ID: "r1", ModuleHash: "h", Status: store.RunCompleted, Result: []byte(`1`)}}}),
		mk(store.Batch{Outcomes: outcomes("r1", "late", 3, 1)}), // refused
		mk(store.Batch{Outcomes: outcomes("r2", "c", 0, 1)}),
	}
	d.applyGroup(slices.Clone(group))
	for i, r := range group {
		err := <-r.done
		if i == 2 {
			if !errors.Is(err, store.ErrImmutable) {
				t.Errorf("request %d, outcomes of the run a batch before it completed: %v, want ErrImmutable", i, err)
			}
		} else if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	o1, _ := d.Outcomes(ctx, "r1")
	o2, _ := d.Outcomes(ctx, "r2")
	if len(o1) != 3 || len(o2) != 1 {
		t.Errorf("outcomes: r1 %d, r2 %d; want 3 (a.0, a.1, b.0), 1", len(o1), len(o2))
	}
}
