package storetest

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// The schedule and hook cases of the suite (store.ScheduleStore).

func testSchedule(name string) store.Schedule {
	return store.Schedule{Name: name, Cron: "*/5 * * * *", Timezone: "Europe/Paris", Module: "digest", Workflow: "Digest",
		Input: []byte(`{"to":"ops"}`), Overlap: store.OverlapBufferOne, Catchup: time.Hour, LastSlot: ts(3).UnixNano(), CreatedAt: ts(1)}
}

func testSchedules(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, name := range []string{"b", "a"} {
		got, err := s.CreateSchedule(ctx, testSchedule(name))
		if err != nil {
			t.Fatalf("CreateSchedule(%s): %v", name, err)
		}
		if got.Version != 1 || !got.CreatedAt.Equal(ts(1)) {
			t.Errorf("CreateSchedule(%s) = version %d, created %v; want 1, %v", name, got.Version, got.CreatedAt, ts(1))
		}
	}
	if _, err := s.CreateSchedule(ctx, testSchedule("a")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateSchedule of an existing name: err = %v, want ErrConflict", err)
	}
	if _, err := s.Schedule(ctx, "zz"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Schedule(unknown): err = %v, want ErrNotFound", err)
	}
	a, err := s.Schedule(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := testSchedule("a")
	want.Version = 1
	if a.Cron != want.Cron || a.Timezone != want.Timezone || string(a.Input) != string(want.Input) || a.Overlap != want.Overlap ||
		a.Catchup != want.Catchup || a.LastSlot != want.LastSlot || a.Version != 1 || !a.CreatedAt.Equal(ts(1)) {
		t.Errorf("Schedule(a) = %+v, want %+v", a, want)
	}
	list, err := s.Schedules(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Fatalf("Schedules = %v, %v; want a, b", list, err)
	}
	a.LastSlot, a.Fired, a.Paused = ts(9).UnixNano(), 3, true
	up, err := s.UpdateSchedule(ctx, a)
	if err != nil || up.Version != 2 {
		t.Fatalf("UpdateSchedule = version %d, %v; want 2, nil", up.Version, err)
	}
	if _, err := s.UpdateSchedule(ctx, a); !errors.Is(err, store.ErrConflict) {
		t.Errorf("UpdateSchedule from a stale version: err = %v, want ErrConflict", err)
	}
	got, err := s.Schedule(ctx, "a")
	if err != nil || got.Version != 2 || got.LastSlot != ts(9).UnixNano() || got.Fired != 3 || !got.Paused || !got.CreatedAt.Equal(ts(1)) {
		t.Errorf("Schedule(a) after update = %+v, %v", got, err)
	}
	if _, err := s.UpdateSchedule(ctx, testSchedule("zz")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateSchedule(unknown): err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteSchedule(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSchedule(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteSchedule twice: err = %v, want ErrNotFound", err)
	}
	if list, _ := s.Schedules(ctx); len(list) != 1 || list[0].Name != "b" {
		t.Errorf("Schedules after delete = %v, want b", list)
	}
}

// testScheduleUpdateConcurrent: updates from one version race; exactly one
// wins, the others fail with ErrConflict.
func testScheduleUpdateConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	sc, err := s.CreateSchedule(ctx, testSchedule("race"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			u := sc
			u.Fired = int64(i + 1)
			_, errs[i] = s.UpdateSchedule(ctx, u)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("updates %d and %d from version 1 both succeeded", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("update %d: err = %v, want nil or ErrConflict", i, err)
		}
	}
	got, err := s.Schedule(ctx, "race")
	if won < 0 || err != nil || got.Version != 2 || got.Fired != int64(won+1) {
		t.Errorf("after the race: winner %d, stored %+v, %v", won, got, err)
	}
}

func testHooks(t *testing.T, s store.Store) {
	ctx := t.Context()
	h := store.Hook{Name: "gh", Module: "m", Workflow: "W", SecretEnv: "SKEIN_HOOK_GH", CreatedAt: ts(1),
		Scheme: "timestamped", Tolerance: 90 * time.Second, KeepHeaders: []string{"X-Api-Key"}}
	if _, err := s.CreateHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateHook(ctx, store.Hook{Name: "a", Module: "m", Workflow: "V", Secret: "a-secret"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateHook(ctx, h); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateHook of an existing name: err = %v, want ErrConflict", err)
	}
	got, err := s.Hook(ctx, "gh")
	if err != nil || got.Module != "m" || got.Workflow != "W" || got.SecretEnv != "SKEIN_HOOK_GH" || !got.CreatedAt.Equal(ts(1)) ||
		got.Scheme != "timestamped" || got.Tolerance != 90*time.Second || !slices.Equal(got.KeepHeaders, []string{"X-Api-Key"}) {
		t.Errorf("Hook(gh) = %+v, %v", got, err)
	}
	if _, err := s.Hook(ctx, "zz"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Hook(unknown): err = %v, want ErrNotFound", err)
	}
	list, err := s.Hooks(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[0].Secret != "a-secret" || list[1].Name != "gh" {
		t.Errorf("Hooks = %v, %v; want a, gh", list, err)
	}
	if err := s.DeleteHook(ctx, "gh"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteHook(ctx, "gh"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteHook twice: err = %v, want ErrNotFound", err)
	}
}

// testHookDeliveries: a delivery id is claimed once per hook until its
// record expires; a released one may be claimed again; of concurrent
// claims of one id, one wins.
func testHookDeliveries(t *testing.T, s store.Store) {
	ctx := t.Context()
	claim := func(hook, id string, now, expires int64, want bool) {
		t.Helper()
		got, err := s.ClaimDelivery(ctx, hook, id, now, expires)
		if err != nil || got != want {
			t.Errorf("ClaimDelivery(%s, %s, now %d, expires %d) = %v, %v; want %v", hook, id, now, expires, got, err, want)
		}
	}
	claim("gh", "a", 10, 20, true)
	claim("gh", "a", 15, 25, false) // a replay within the window
	claim("other", "a", 15, 25, true)
	claim("gh", "b", 15, 25, true)
	claim("gh", "a", 20, 30, true) // expired at 20
	claim("gh", "a", 21, 31, false)
	if err := s.ReleaseDelivery(ctx, "gh", "b"); err != nil {
		t.Fatal(err)
	}
	claim("gh", "b", 22, 32, true)
	if err := s.ReleaseDelivery(ctx, "gh", "never"); err != nil {
		t.Errorf("ReleaseDelivery of an id never claimed: %v; want nil", err)
	}
	const n = 8
	var wg sync.WaitGroup
	var won atomic.Int32
	for range n {
		wg.Go(func() {
			ok, err := s.ClaimDelivery(ctx, "gh", "race", 40, 50)
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d concurrent claims of one delivery: %d won; want 1", n, won.Load())
	}
}
