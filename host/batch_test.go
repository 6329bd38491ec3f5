package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

// TestBatchTakeover: a batch's worker stops midway (its context ends
// in an action) and hands the batch over; another worker claims it at
// once and finishes it from the cursor. Each run the first
// worker recorded is acted on once, the one in flight at most twice,
// a run created after the batch never; the counts and errors add up.
func TestBatchTakeover(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	// test-count counts its calls by run, and calls onCall (when set)
	// before it returns.
	var countAction struct {
		sync.Mutex
		calls  map[string]int
		onCall func(n int)
	}
	countAction.calls = map[string]int{}
	count := func(ctx context.Context, _ *Host, run store.Run, _ json.RawMessage) error {
		countAction.Lock()
		countAction.calls[run.ID]++
		n, on := len(countAction.calls), countAction.onCall
		countAction.Unlock()
		if on != nil {
			on(n)
		}
		if run.ID == "r-03" {
			return errors.New("r-03 refuses")
		}
		return ctx.Err()
	}
	h, err := newHost(ctx, Config{Store: st}, testHooks{batchActions: map[string]batchAction{"test-count": {Do: count}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for i := range 30 {
		if _, _, err := st.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r-%02d", i), ModuleHash: "m", Workflow: "w", Status: store.RunSuspended}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.CreateRun(ctx, store.Run{ID: "other", ModuleHash: "m", Workflow: "w", Status: store.RunCompleted}); err != nil {
		t.Fatal(err)
	}
	j, err := h.StartBatch(ctx, BatchOptions{Where: "status = suspended", Action: "test-count", Rate: MaxBatchRate})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateRun(ctx, store.Run{ID: "r-late", ModuleHash: "m", Workflow: "w", Status: store.RunSuspended}); err != nil {
		t.Fatal(err)
	}
	// The first worker's context ends during its 10th action.
	crash, stop := context.WithCancel(ctx)
	countAction.onCall = func(n int) {
		if n == 10 {
			stop()
		}
	}
	const ttl = time.Minute
	now := time.Now().UnixNano()
	c1, ok, err := st.ClaimBatchJob(ctx, "w1", now, ttl)
	if err != nil || !ok || c1.ID != j.ID {
		t.Fatalf("claim = %v, %v, %v", c1.ID, ok, err)
	}
	if err := h.driveBatch(crash, c1, ttl); !errors.Is(err, context.Canceled) {
		t.Fatalf("the first drive: %v, want it stopped", err)
	}
	countAction.onCall = nil
	mid, _ := st.BatchJob(ctx, j.ID)
	if mid.Status != store.BatchRunning || mid.Cursor != "r-08" || mid.Done+mid.Failed != 9 || mid.Selected != 30 {
		t.Fatalf("the batch after the first drive: %+v; want running, 9 runs in, cursor r-08, 30 selected", mid)
	}
	if _, ok, _ := st.ClaimBatchJob(ctx, "w2", now, ttl); ok {
		t.Fatal("w2 claimed the batch at a time w1's lease was live")
	}
	// w1 handed the batch over as it stopped: it is free now, not a TTL later.
	c2, ok, err := st.ClaimBatchJob(ctx, "w2", time.Now().UnixNano(), ttl)
	if err != nil || !ok || c2.LeaseToken != 2 {
		t.Fatalf("takeover claim = %+v, %v, %v", c2, ok, err)
	}
	if err := h.driveBatch(ctx, c2, ttl); err != nil {
		t.Fatal(err)
	}
	end, _ := st.BatchJob(ctx, j.ID)
	if end.Status != store.BatchDone || end.Done != 29 || end.Failed != 1 || end.Selected != 30 || end.Cursor != "r-29" ||
		len(end.Errors) != 1 || end.Errors[0].RunID != "r-03" || end.LeaseOwner != "" {
		t.Fatalf("the batch at its end: %+v; want done, 29 done, r-03 failed, released", end)
	}
	for i := range 30 {
		id := fmt.Sprintf("r-%02d", i)
		want := 1
		if id == "r-09" {
			want = 2 // in flight when the first worker stopped
		}
		if n := countAction.calls[id]; n != want {
			t.Errorf("%s acted on %d times, want %d", id, n, want)
		}
	}
	if n := countAction.calls["r-late"] + countAction.calls["other"]; n != 0 {
		t.Errorf("runs the batch does not select were acted on %d times", n)
	}
}

// TestStartBatchRefuses: a batch without a filter, with a bad one, an
// unknown action, bad arguments or rate is refused (ErrInvalid) with
// the rule, and nothing is stored.
func TestStartBatchRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	h, err := New(ctx, Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for _, tc := range []struct {
		o    BatchOptions
		rule string
	}{
		{BatchOptions{Action: "cancel"}, "needs a filter"},
		{BatchOptions{Where: "status = nope", Action: "cancel"}, `status "nope": want one of`},
		{BatchOptions{Where: "module = nosuch", Action: "cancel"}, `module "nosuch": no module has this name or hash`},
		{BatchOptions{Where: "status = failed", Action: "explode"}, `batch action "explode": want one of cancel`},
		{BatchOptions{Where: "status = failed", Action: "cancel", Args: json.RawMessage(`{"why":1}`)}, "unknown field"},
		{BatchOptions{Where: "status = failed", Action: "cancel", Rate: 5000}, "want from 0.01 to 1000"},
	} {
		_, err := h.StartBatch(ctx, tc.o)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("StartBatch(%+v) = %v; want ErrInvalid with %q", tc.o, err, tc.rule)
		}
	}
	if js, _ := st.BatchJobs(ctx, 0); len(js) != 0 {
		t.Errorf("refused batches were stored: %d", len(js))
	}
}
