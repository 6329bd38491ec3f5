package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// workFor runs h's workers (and scheduler) in the background until the
// test ends.
func workFor(t *testing.T, h *testHost) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Work(ctx, WorkOptions{Poll: 50 * time.Millisecond, Grace: time.Second}) }()
	t.Cleanup(func() { stop(); <-done })
}

// TestScheduleOverlap: with a run that waits for a promise, skip starts
// nothing more and counts the slots; buffer-one keeps one slot and starts
// it once the run ends.
func TestScheduleOverlap(t *testing.T) {
	for _, policy := range []store.Overlap{store.OverlapSkip, store.OverlapBufferOne} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			h := newTestHost(t, Config{})
			h.deploy(t, "./testdata/workflows/features")
			ctx := context.Background()
			if _, err := h.CreateSchedule(ctx, ScheduleOptions{Name: "w", Cron: "* * * * * *", Module: "features", Workflow: "waiter", Overlap: policy}); err != nil {
				t.Fatal(err)
			}
			workFor(t, h)
			time.Sleep(3500 * time.Millisecond)
			sc, err := h.Schedule(ctx, "w")
			if err != nil {
				t.Fatal(err)
			}
			if sc.Fired != 1 || sc.Overlapped < 1 || sc.LastStatus != store.RunSuspended {
				t.Fatalf("after 3 slots: fired %d, overlapped %d, last %s %s; want 1, >= 1, suspended", sc.Fired, sc.Overlapped, sc.LastRun, sc.LastStatus)
			}
			if policy == store.OverlapSkip && (sc.Buffered != 0 || sc.Overlapped < 2) {
				t.Fatalf("skip: buffered %d, overlapped %d; want 0 and >= 2", sc.Buffered, sc.Overlapped)
			}
			if policy == store.OverlapBufferOne && sc.Buffered == 0 {
				t.Fatalf("buffer-one: no slot buffered")
			}
			first := sc.LastRun
			if err := h.Resolve(ctx, first+".ok", json.RawMessage(`"go"`), ""); err != nil {
				t.Fatal(err)
			}
			if r, err := h.Await(ctx, first); err != nil || r.Status != store.RunCompleted {
				t.Fatalf("run %s: %v %v", first, r.Status, err)
			}
			ended := time.Now()
			// The scheduler's next look (within a second) starts the
			// buffered slot.
			var after ScheduleInfo
			for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				var err error
				if after, err = h.Schedule(ctx, "w"); err != nil {
					t.Fatal(err)
				}
				if after.LastRun != first || time.Now().After(deadline) {
					break
				}
			}
			switch policy {
			case store.OverlapBufferOne:
				want := ScheduleRunID("w", time.Unix(0, sc.Buffered))
				// (and, that run waiting too, a later slot may be buffered in turn)
				if after.LastRun != want || after.Fired != 2 || (after.Buffered != 0 && after.Buffered <= sc.Buffered) {
					t.Fatalf("buffer-one after the run ended: last %s, buffered %d, fired %d; want the buffered slot %s started", after.LastRun, after.Buffered, after.Fired, want)
				}
			case store.OverlapSkip: // the next slot after the run ended starts; the skipped ones never do
				if after.Fired != 2 || after.LastRun == first || time.Unix(0, after.LastFired).Before(ended.Truncate(time.Second)) {
					t.Fatalf("skip after the run ended at %s: fired %d, last run %s; want 2 and a slot after the end", ended, after.Fired, after.LastRun)
				}
			}
		})
	}
}

// TestScheduleBadInput: each rule broken gets an error naming the input.
func TestScheduleBadInput(t *testing.T) {
	h := newTestHost(t, Config{})
	h.deploy(t, "./testdata/workflows/features")
	ctx := context.Background()
	ok := ScheduleOptions{Name: "s", Cron: "0 7 * * *", Module: "features", Workflow: "waiter"}
	for _, c := range []struct {
		edit func(o *ScheduleOptions)
		want string
	}{
		{func(o *ScheduleOptions) { o.Name = "a b" }, `schedule name "a b" has " " at byte 1`},
		{func(o *ScheduleOptions) { o.Name = "" }, `schedule name "": want 1 to 64 characters`},
		{func(o *ScheduleOptions) { o.Cron = "61 * * * *" }, `cron "61 * * * *": `},
		{func(o *ScheduleOptions) { o.Cron = "* * *" }, `want 5 fields`},
		{func(o *ScheduleOptions) { o.Timezone = "Mars/Olympus" }, `timezone "Mars/Olympus"`},
		{func(o *ScheduleOptions) { o.Overlap = "queue" }, `overlap "queue": want skip, buffer-one or allow`},
		{func(o *ScheduleOptions) { o.Catchup = -time.Second }, `catch-up window -1s is negative`},
		{func(o *ScheduleOptions) { o.Workflow = "nope" }, `has no workflow "nope"`},
		{func(o *ScheduleOptions) { o.Input = json.RawMessage(`{`) }, `input is not valid JSON`},
	} {
		o := ok
		c.edit(&o)
		_, err := h.CreateSchedule(ctx, o)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v; want ErrInvalid naming %q", o, err, c.want)
		}
	}
	o := ok
	o.Module = "missing"
	if _, err := h.CreateSchedule(ctx, o); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown module: err = %v, want ErrNotFound", err)
	}
	if _, err := h.CreateSchedule(ctx, ok); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreateSchedule(ctx, ok); !errors.Is(err, ErrConflict) {
		t.Errorf("a second schedule s: err = %v, want ErrConflict", err)
	}
	if s, err := h.Schedules(ctx); err != nil || len(s) != 1 {
		t.Errorf("Schedules = %d, %v; want the one valid schedule", len(s), err)
	}
}
