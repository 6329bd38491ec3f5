package host

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/activity"
)

// closeWithActivity starts a run whose activity act is in flight, on a
// host of its own that the caller closes; drive ends the run's drive.
func closeWithActivity(t *testing.T, act activity.Func, started <-chan struct{}) (h *testHost, endDrive func()) {
	t.Helper()
	h = newTestHost(t, Config{})
	m := h.deploy(t, featuresPkg)
	h.RegisterActivity("act", act)
	r := startRun(t, h, m, "call", `{"activity":"act"}`, 0)
	dctx, cancel := context.WithCancel(context.Background())
	drove := make(chan struct{})
	go func() {
		defer close(drove)
		h.Drive(dctx, r.ID, DriveOptions{})
	}()
	<-started
	return h, func() { cancel(); <-drove }
}

// TestCloseStopsActivities: Host.Close cancels the activity calls in
// flight and returns only once their goroutines have ended (before, it
// returned at once and left them running).
func TestCloseStopsActivities(t *testing.T) {
	var ended atomic.Bool
	started := make(chan struct{})
	h, endDrive := closeWithActivity(t, func(ctx context.Context, in []byte) ([]byte, error) {
		close(started)
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond) // it takes a moment to stop
		ended.Store(true)
		return nil, ctx.Err()
	}, started)
	defer endDrive()
	if err := h.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !ended.Load() {
		t.Fatal("Close returned while the activity's goroutine still ran")
	}
}

// TestCloseActivityIgnoringContext: an activity that ignores its context
// makes Close return the error of its own context, saying what is left,
// instead of hanging.
func TestCloseActivityIgnoringContext(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{})
	h, endDrive := closeWithActivity(t, func(ctx context.Context, in []byte) ([]byte, error) {
		close(started)
		<-release
		return nil, nil
	}, started)
	defer endDrive()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := h.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with an activity ignoring its context: %v; want the deadline's error", err)
	}
	t.Log(err)
}
