package check

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

// TestCrashPoints: within the budget every crash point is replayed, in
// order; past it, the verifying replay (the last point) and the replay
// from nothing (the first) always are, and the others are spread over the
// journal, each once.
func TestCrashPoints(t *testing.T) {
	if got := crashPoints(5, 9, 0.3); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Errorf("crashPoints(5, 9) = %v; want all five", got)
	}
	for _, k := range []int{1, 2, 3, 10, 50} {
		got := crashPoints(401, k, 0.7)
		if len(got) != k || got[0] != 401 || (k > 1 && got[1] != 1) {
			t.Errorf("crashPoints(401, %d) = %v; want %d points, the last and the first before the others", k, got, k)
		}
		sorted := slices.Clone(got)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != k || sorted[0] < 1 || sorted[len(sorted)-1] > 401 {
			t.Errorf("crashPoints(401, %d) = %v; want distinct points from 1 to 401", k, got)
		}
	}
}

// TestCheckBudgetSamples: a check whose crash replays do not fit its
// budget replays a sample of them (never fewer than two per run), counts
// every crash point, and says so in its summary; with no budget it
// replays them all. Either way its store is empty once it is done: no
// run of any schedule, crash copy or child is kept (before, every crash
// copy stayed in memory, and a 200-task fan-out's check needed 17.8 GB).
func TestCheckBudgetSamples(t *testing.T) {
	in := []byte(`{"n":30}`) // 60 steps: 61 crash points a schedule
	left := -1
	keep := func(m *memory.Store) {
		rs, err := m.Runs(context.Background(), store.RunFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		left = len(rs)
	}
	r := check(t, "./testdata/workflows/fanout200", Options{Workflow: "fanout", Input: in, Schedules: 6, Budget: 1, checked: keep})
	if !r.OK() || !r.Sampled() || r.CrashPoints != 6*61 || r.Replays != 6*2 {
		t.Fatalf("sampled check: %d of %d crash points replayed, sampled %v; want 12 of 366\n%s", r.Replays, r.CrashPoints, r.Sampled(), details(r))
	}
	if !strings.Contains(r.Summary(), "12 replays of 366 crash points (3.3%: sampled to fit the budget of 1ns") {
		t.Errorf("summary %q does not say the crash points were sampled", r.Summary())
	}
	if left != 0 {
		t.Errorf("%d runs left in the check's store; want none", left)
	}
	r = check(t, "./testdata/workflows/fanout200", Options{Workflow: "fanout", Input: in, Schedules: 2, checked: keep})
	if !r.OK() || r.Sampled() || r.Replays != r.CrashPoints || r.CrashPoints != 2*61 || strings.Contains(r.Summary(), "sampled") {
		t.Fatalf("check without a budget: %d of %d crash points; want all 122\n%s", r.Replays, r.CrashPoints, details(r))
	}
	if left != 0 {
		t.Errorf("%d runs left in the check's store; want none", left)
	}
}
