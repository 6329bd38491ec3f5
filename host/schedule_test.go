package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
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
// it once the run ends. Both schedules run on one host (one compilation).
func TestScheduleOverlap(t *testing.T) {
	h := newTestHost(t, Config{})
	h.deploy(t, "./testdata/workflows/features")
	ctx := context.Background()
	policies := []store.Overlap{store.OverlapSkip, store.OverlapBufferOne}
	for _, p := range policies {
		if _, err := h.CreateSchedule(ctx, ScheduleOptions{Name: string(p), Cron: "* * * * * *", Module: "features", Workflow: "waiter", Overlap: p}); err != nil {
			t.Fatal(err)
		}
	}
	workFor(t, h)
	time.Sleep(3500 * time.Millisecond)
	before := map[store.Overlap]ScheduleInfo{}
	for _, p := range policies {
		sc, err := h.Schedule(ctx, string(p))
		if err != nil {
			t.Fatal(err)
		}
		if sc.Fired != 1 || sc.Overlapped < 1 || sc.LastStatus != store.RunSuspended {
			t.Fatalf("%s after 3 slots: fired %d, overlapped %d, last %s %s; want 1, >= 1, suspended", p, sc.Fired, sc.Overlapped, sc.LastRun, sc.LastStatus)
		}
		if p == store.OverlapSkip && (sc.Buffered != 0 || sc.Overlapped < 2) {
			t.Fatalf("skip: buffered %d, overlapped %d; want 0 and >= 2", sc.Buffered, sc.Overlapped)
		}
		if p == store.OverlapBufferOne && sc.Buffered == 0 {
			t.Fatalf("buffer-one: no slot buffered")
		}
		if err := h.Resolve(ctx, sc.LastRun+".ok", json.RawMessage(`"go"`), ""); err != nil {
			t.Fatal(err)
		}
		if r, err := h.Await(ctx, sc.LastRun); err != nil || r.Status != store.RunCompleted {
			t.Fatalf("run %s: %v %v", sc.LastRun, r.Status, err)
		}
		before[p] = sc
	}
	// The scheduler's next look (within a second) starts the next slot.
	after := map[store.Overlap]ScheduleInfo{}
	for _, p := range policies {
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			sc, err := h.Schedule(ctx, string(p))
			if err != nil {
				t.Fatal(err)
			}
			if after[p] = sc; sc.LastRun != before[p].LastRun || time.Now().After(deadline) {
				break
			}
		}
	}
	// buffer-one starts the buffered slot (and, that run waiting too, a
	// later slot may be buffered in turn).
	b, a := before[store.OverlapBufferOne], after[store.OverlapBufferOne]
	if want := ScheduleRunID("buffer-one", time.Unix(0, b.Buffered)); a.LastRun != want || a.Fired != 2 || (a.Buffered != 0 && a.Buffered <= b.Buffered) {
		t.Errorf("buffer-one after the run ended: last %s, buffered %d, fired %d; want the buffered slot %s started", a.LastRun, a.Buffered, a.Fired, want)
	}
	// skip starts the next slot after the run ended; the skipped ones never.
	if a, b := after[store.OverlapSkip], before[store.OverlapSkip]; a.Fired != 2 || a.LastFired <= b.LastSlot {
		t.Errorf("skip after the run ended: fired %d, last run %s; want 2, a slot after those skipped (up to %s)", a.Fired, a.LastRun, time.Unix(0, b.LastSlot).UTC())
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

// longCron is a valid expression of 239 bytes (every minute of every
// hour listed, seconds first), under MaxCronLen.
func longCron() string {
	var mins, hours []string
	for i := range 60 {
		mins = append(mins, strconv.Itoa(i))
	}
	for i := range 24 {
		hours = append(hours, strconv.Itoa(i))
	}
	return "0 " + strings.Join(mins, ",") + " " + strings.Join(hours, ",") + " * * *"
}

// TestScheduleParsesOnce: the scheduler parses a schedule's expression
// once, not at each of its looks, and reading the schedule does not parse
// it again; a deleted schedule's entry leaves the cache at the next look.
// An expression over MaxCronLen is refused before it is parsed.
func TestScheduleParsesOnce(t *testing.T) {
	h := newTestHost(t, Config{})
	h.deploy(t, "./testdata/workflows/features")
	ctx := context.Background()
	if _, err := h.CreateSchedule(ctx, ScheduleOptions{Name: "s", Cron: longCron(), Module: "features", Workflow: "waiter"}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := h.scheduleTick(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Schedule(ctx, "s"); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.specs.Parses(); n != 1 {
		t.Errorf("20 looks and 20 reads of one schedule parsed its expression %d times; want 1", n)
	}
	if err := h.DeleteSchedule(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		h.scheduleTick(ctx, time.Now())
	}
	if n := h.specs.Len(); n != 0 {
		t.Errorf("%d parsed expressions kept after the schedule was deleted; want 0", n)
	}
	long := "0 " + strings.Repeat("1,", 200) + "1 * * * *"
	_, err := h.CreateSchedule(ctx, ScheduleOptions{Name: "long", Cron: long, Module: "features", Workflow: "waiter"})
	if want := fmt.Sprintf("cron expression of %d bytes: the limit is 256 bytes (host.MaxCronLen)", len(long)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("a %d-byte expression: %v; want ErrInvalid naming %q", len(long), err, want)
	}
}

// BenchmarkScheduleTick is one look of the scheduler at ten schedules of
// 239-byte expressions with nothing due: reading them from the store and
// finding their next slots.
func BenchmarkScheduleTick(b *testing.B) {
	h := newTestHost(b, Config{})
	h.deploy(b, "./testdata/workflows/features")
	ctx := context.Background()
	for i := range 10 {
		if _, err := h.CreateSchedule(ctx, ScheduleOptions{Name: fmt.Sprintf("s%d", i), Cron: longCron(), Module: "features", Workflow: "waiter"}); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	for b.Loop() {
		if _, err := h.scheduleTick(ctx, now); err != nil {
			b.Fatal(err)
		}
	}
}

// stopAtFire ends the worker's context as soon as a schedule step that
// fires a slot is committed: the worker is told to stop between the
// slot and its run.
type stopAtFire struct {
	store.Store
	stop context.CancelFunc
}

func (s stopAtFire) UpdateSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	got, err := s.Store.UpdateSchedule(ctx, sc)
	if err == nil && got.Fired > 0 {
		s.stop()
	}
	return got, err
}

// TestScheduleStopAfterFire: a worker that stops right after it fired a
// slot still creates the slot's run, so every fired slot has its run
// once Work returns (before, the run's creation failed with the stopping
// context and waited for the next worker's look).
func TestScheduleStopAfterFire(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	h, err := newHost(ctx, Config{Store: stopAtFire{Store: st, stop: stop}, CacheDir: cacheDir}, withTestDefaults(testHooks{}))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	th := &testHost{Host: h, st: st}
	th.deploy(t, "./testdata/workflows/features")
	if _, err := h.CreateSchedule(ctx, ScheduleOptions{Name: "s", Cron: "* * * * * *", Module: "features", Workflow: "waiter"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Work(wctx, WorkOptions{Poll: 20 * time.Millisecond, Grace: time.Second}); err != nil {
		t.Fatal(err)
	}
	sc, err := h.Schedule(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := st.Runs(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Fired != 1 || len(runs) != 1 || runs[0].ID != sc.LastRun {
		t.Fatalf("after a stop at the first fired slot: fired %d, runs %v, last run %s; want 1 run, the slot's", sc.Fired, len(runs), sc.LastRun)
	}
}
