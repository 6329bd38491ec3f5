package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/skeinrun/skein/store"
)

// testRunsOrder: Runs filtered by workflow, module and creation time, and
// ordered by creation, end, duration and status, both ways, with the
// cursor (the last run's id and sort key) walking every order page by
// page.
func testRunsOrder(t *testing.T, s store.Store) {
	m1, m2 := fmt.Sprintf("%064x", 1), fmt.Sprintf("%064x", 2)
	// id, workflow, module, status, created (s), updated (s)
	for _, c := range []struct {
		id, wf, mod string
		st          store.RunStatus
		c, u        int64
	}{
		{"a", "alpha", m1, store.RunCompleted, 5, 9},  // ended at 9 after 4
		{"b", "beta", m2, store.RunFailed, 3, 4},      // ended at 4 after 1
		{"c", "alpha", m1, store.RunSuspended, 1, 50}, // not ended
		{"d", "alpha", m2, store.RunCanceled, 2, 9},   // ended at 9 after 7
		{"e", "beta", m1, store.RunPending, 4, 4},     // not ended
		{"f", "alpha", m1, store.RunContinued, 6, 7},  // ended at 7 after 1
	} {
		r := testRun(c.id)
		r.Workflow, r.ModuleHash, r.Status, r.CreatedAt, r.UpdatedAt = c.wf, c.mod, c.st, ts(c.c), ts(c.u)
		mustCreateRun(t, s, r)
	}
	for _, tc := range []struct {
		f    store.RunFilter
		want []string
	}{
		{store.RunFilter{Desc: true}, []string{"f", "e", "d", "c", "b", "a"}},
		{store.RunFilter{Workflow: "alpha"}, []string{"a", "c", "d", "f"}},
		{store.RunFilter{Workflow: "alpha", Module: m2}, []string{"d"}},
		{store.RunFilter{Module: m1, Status: store.RunPending}, []string{"e"}},
		{store.RunFilter{Workflow: "gamma"}, nil},
		{store.RunFilter{CreatedFrom: ts(3).UnixNano(), CreatedTo: ts(5).UnixNano()}, []string{"b", "e"}},
		{store.RunFilter{CreatedFrom: ts(5).UnixNano()}, []string{"a", "f"}},
		{store.RunFilter{CreatedTo: ts(2).UnixNano() + 1}, []string{"c", "d"}},
		{store.RunFilter{Order: store.OrderCreated}, []string{"c", "d", "b", "e", "a", "f"}},
		{store.RunFilter{Order: store.OrderCreated, Desc: true}, []string{"f", "a", "e", "b", "d", "c"}},
		{store.RunFilter{Order: store.OrderEnded}, []string{"b", "f", "a", "d", "c", "e"}},
		{store.RunFilter{Order: store.OrderEnded, Desc: true}, []string{"d", "a", "f", "b", "e", "c"}},
		{store.RunFilter{Order: store.OrderDuration}, []string{"b", "f", "a", "d", "c", "e"}},
		{store.RunFilter{Order: store.OrderDuration, Desc: true}, []string{"d", "a", "f", "b", "e", "c"}},
		{store.RunFilter{Order: store.OrderStatus}, []string{"e", "c", "a", "b", "d", "f"}},
		{store.RunFilter{Order: store.OrderStatus, Desc: true, Workflow: "alpha"}, []string{"f", "d", "a", "c"}},
	} {
		checkRuns(t, s, tc.f, tc.want)
		if tc.f.Order == store.OrderID && !tc.f.Desc {
			continue
		}
		// Page by page, two at a time, from the cursor of each page.
		var paged []string
		f := tc.f
		f.Limit = 2
		for range 4 {
			rs, err := s.Runs(t.Context(), f)
			if err != nil {
				t.Fatalf("Runs(%+v): %v", f, err)
			}
			paged = append(paged, runIDs(rs)...)
			if len(rs) < f.Limit {
				break
			}
			last := rs[len(rs)-1]
			f.After, f.AfterKey = last.ID, store.RunSortKey(last, f.Order, f.Desc)
		}
		if !slices.Equal(paged, tc.want) {
			t.Errorf("Runs(%+v) two at a time = %q, want %q", tc.f, paged, tc.want)
		}
	}
}

func checkRuns(t *testing.T, s store.Store, f store.RunFilter, want []string) {
	t.Helper()
	rs, err := s.Runs(t.Context(), f)
	if err != nil {
		t.Fatalf("Runs(%+v): %v", f, err)
	}
	if got := runIDs(rs); !slices.Equal(got, want) {
		t.Errorf("Runs(%+v) = %q, want %q", f, got, want)
	}
}
