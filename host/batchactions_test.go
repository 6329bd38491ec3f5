package host

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

// TestBatchActions: the pause, unpause and delete actions act on the
// runs their filter selects and on no other, and a second batch of the
// same action over the same runs succeeds on every run (a worker's
// crash can act on a run twice).
func TestBatchActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	h, err := New(ctx, Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for i := range 6 {
		status := store.RunSuspended
		if i%2 == 1 {
			status = store.RunCompleted
		}
		if _, _, err := st.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r-%d", i), ModuleHash: "m", Workflow: "w", Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	batch := func(where, action, args string) store.BatchJob {
		t.Helper()
		j, err := h.StartBatch(ctx, BatchOptions{Where: where, Action: action, Args: []byte(args), Rate: MaxBatchRate})
		if err != nil {
			t.Fatal(err)
		}
		c, ok, err := st.ClaimBatchJob(ctx, "w", time.Now().UnixNano(), time.Minute)
		if err != nil || !ok || c.ID != j.ID {
			t.Fatalf("claim %s: %v %v %v", action, c.ID, ok, err)
		}
		if err := h.driveBatch(ctx, c, time.Minute); err != nil {
			t.Fatal(err)
		}
		end, _ := st.BatchJob(ctx, j.ID)
		if end.Status != store.BatchDone || end.Failed != 0 || end.Done != 3 {
			t.Fatalf("%s batch: %+v; want done, 3 runs, none failed", action, end)
		}
		return end
	}
	paused := func() (ids []string) {
		for i := range 6 {
			r, err := st.Run(ctx, fmt.Sprintf("r-%d", i))
			if err == nil && r.IsPaused() {
				ids = append(ids, r.ID)
				if r.Paused.By != "batch" || r.Paused.Reason != "night" {
					t.Errorf("%s paused by %q: %q; want batch: night", r.ID, r.Paused.By, r.Paused.Reason)
				}
			}
		}
		return ids
	}
	for range 2 {
		batch("status = suspended", "pause", `{"reason":"night"}`)
		if got := fmt.Sprint(paused()); got != "[r-0 r-2 r-4]" {
			t.Fatalf("paused after the pause batch: %s", got)
		}
	}
	batch("status = suspended", "unpause", "")
	if got := paused(); len(got) != 0 {
		t.Fatalf("paused after the unpause batch: %v", got)
	}
	batch("status = completed", "delete", "")
	for i := range 6 {
		_, err := st.Run(ctx, fmt.Sprintf("r-%d", i))
		if gone := errors.Is(err, store.ErrNotFound); gone != (i%2 == 1) {
			t.Errorf("r-%d: deleted %v, want %v", i, gone, i%2 == 1)
		}
	}
	if _, err := h.StartBatch(ctx, BatchOptions{Where: "status = failed", Action: "reset", Args: []byte(`{}`)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a reset batch without a key: %v, want ErrInvalid", err)
	}
}
