package host

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/store"
)

// pausePkg is the module of the pause tests (cmd/skein's too).
const pausePkg = "./testdata/workflows/pause/v1"

// TestPauseExhaustedCall: an in-process activity call under
// RetryPolicy{OnExhausted: skein.Pause} whose attempts all fail pauses
// the run (by "retry policy", naming the call and its last error) and
// its Drive returns; a paused run is not driven; once the activity is
// fixed and the run unpaused, the call gets a fresh round and the run
// completes.
func TestPauseExhaustedCall(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	m := h.deploy(t, pausePkg)
	var fixed atomic.Bool
	h.RegisterActivity("charge", activity.Typed(func(_ context.Context, in string) (string, error) {
		if !fixed.Load() {
			return "", errors.New("gateway down")
		}
		return "charged " + in, nil
	}))
	ctx := t.Context()
	if _, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "charge", Input: []byte(`"42"`), ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	r, err := h.Drive(ctx, "c1", DriveOptions{})
	if err != nil {
		t.Fatalf("Drive: %v", err)
	}
	wantReason := `call "charge" (key 1) ran out of retries after 2 attempts; last error: gateway down`
	if !r.IsPaused() || r.Paused.By != "retry policy" || r.Paused.Reason != wantReason || r.Status.Terminal() {
		t.Fatalf("after the exhausted call the run is %s, paused %+v; want paused by the retry policy: %s", r.Status, r.Paused, wantReason)
	}
	if o, err := h.st.Outcome(ctx, "c1", "1"); err != nil || o.Status != store.OutcomePending || o.Attempts != 2 {
		t.Errorf("the exhausted call: %+v, %v; want pending after 2 attempts", o, err)
	}
	if _, err := h.Drive(ctx, "c1", DriveOptions{}); !errors.Is(err, store.ErrPaused) || !strings.Contains(err.Error(), "retry policy") {
		t.Errorf("Drive of a paused run: %v; want ErrPaused naming who paused it", err)
	}
	fixed.Store(true)
	if _, err := h.Unpause(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if r, err = h.Drive(ctx, "c1", DriveOptions{}); err != nil || r.Status != store.RunCompleted || string(r.Result) != `"charged 42"` {
		t.Fatalf("after the fix and the unpause: %s %s %v; want completed", r.Status, r.Result, err)
	}
	if o, _ := h.st.Outcome(ctx, "c1", "1"); o.Attempts != 3 {
		t.Errorf("the call after the unpause took %d attempts in all; want 3", o.Attempts)
	}
}

// TestPauseStopsWork: a run that Work executes (a loop of steps) stops
// when paused, within the cancel grace, keeping what it recorded and
// releasing its lease; Unpause makes it due at once and it completes,
// each step counted once in its result. Run it with -race: the pause
// reaches the execution from another goroutine.
func TestPauseStopsWork(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	m := h.deploy(t, "./testdata/workflows/server") // chain: n steps of ms each
	wctx, stop := context.WithCancel(context.Background())
	worked := make(chan struct{})
	go func() { defer close(worked); h.Work(wctx, WorkOptions{Poll: 20 * time.Millisecond}) }()
	defer func() { stop(); <-worked }()
	ctx := t.Context()
	if _, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "chain", Input: []byte(`{"n":20,"ms":30}`), ID: "l1"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { outs, _ := h.st.Outcomes(ctx, "l1"); return len(outs) >= 3 })
	if _, err := h.Pause(ctx, "l1", "test", "hold"); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	waitFor(t, func() bool { r, _ := h.Run(ctx, "l1"); return r.LeaseOwner == "" })
	if took := time.Since(paused); took > CancelGrace+3*time.Second { // margin for a loaded machine and -race
		t.Errorf("the execution stopped %s after the pause; want within %s", took, CancelGrace)
	}
	held, _ := h.st.Outcomes(ctx, "l1")
	time.Sleep(200 * time.Millisecond)
	if now, _ := h.st.Outcomes(ctx, "l1"); len(now) != len(held) {
		t.Errorf("the paused run recorded %d records, then %d", len(held), len(now))
	}
	if _, err := h.Unpause(ctx, "l1"); err != nil {
		t.Fatal(err)
	}
	r, err := h.Await(ctx, "l1")
	if err != nil || r.Status != store.RunCompleted || string(r.Result) != "210" {
		t.Fatalf("after the unpause: %s %s %v; want completed with 210", r.Status, r.Result, err)
	}
}
