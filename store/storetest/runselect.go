package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// testRunsSelect: the conditions of store.RunSelect (the filter
// language's) select the same runs on every backend, alone, together
// and with the cursor and the orders.
func testRunsSelect(t *testing.T, s store.Store) {
	ctx := t.Context()
	at := func(sec int) time.Time { return ts(int64(sec)) }
	mk := func(id string, st store.RunStatus, parent, errText string, created, updated int) {
		r := testRun(id)
		r.Status, r.Parent, r.Error = st, parent, errText
		r.CreatedAt, r.UpdatedAt = at(created), at(updated)
		mustCreateRun(t, s, r)
	}
	mk("a", store.RunFailed, "", "activity timeout after 3 attempts", 10, 20)
	mk("b", store.RunCompleted, "", "", 11, 30)
	mk("c", store.RunSuspended, "a", "", 12, 40) // not ended: no end time
	mk("hook:h1:0001", store.RunCanceled, "", "canceled", 13, 25)
	mk("hook:h10:0001", store.RunCompleted, "", "", 13, 25)
	mk("sched:d@2026-12-01T07:00:00Z", store.RunFailed, "", "Timeout", 14, 50)
	mk("sched:d@2026-12-01T07:00:00Z.s1", store.RunFailed, "sched:d@2026-12-01T07:00:00Z", "x timeout", 15, 51)
	mk("sched:dd@2026-12-01T07:00:00Z", store.RunFailed, "", "", 16, 52)
	mk("sched:d", store.RunFailed, "", "", 16, 52) // no @: not the schedule's
	sel := func(s store.RunSelect) store.RunFilter { return store.RunFilter{RunSelect: s} }
	for _, tc := range []struct {
		name string
		f    store.RunFilter
		want []string
	}{
		{"statuses", sel(store.RunSelect{Statuses: []store.RunStatus{store.RunCompleted, store.RunCanceled}}),
			[]string{"b", "hook:h10:0001", "hook:h1:0001"}}, // '0' < ':'

		{"status and statuses", store.RunFilter{Status: store.RunCompleted, RunSelect: store.RunSelect{Statuses: []store.RunStatus{store.RunCanceled}}}, nil},
		{"ids", sel(store.RunSelect{IDs: []string{"c", "a", "zz"}}), []string{"a", "c"}},
		{"ended from", sel(store.RunSelect{EndedFrom: at(30).UnixNano()}),
			[]string{"b", "sched:d", "sched:d@2026-12-01T07:00:00Z", "sched:d@2026-12-01T07:00:00Z.s1", "sched:dd@2026-12-01T07:00:00Z"}},
		{"ended range", sel(store.RunSelect{EndedFrom: at(20).UnixNano(), EndedTo: at(30).UnixNano()}),
			[]string{"a", "hook:h10:0001", "hook:h1:0001"}},
		{"ended to", sel(store.RunSelect{EndedTo: at(21).UnixNano()}), []string{"a"}},
		{"parent", sel(store.RunSelect{Parent: "a"}), []string{"c"}},
		{"schedule", sel(store.RunSelect{Schedule: "d"}),
			[]string{"sched:d@2026-12-01T07:00:00Z", "sched:d@2026-12-01T07:00:00Z.s1"}},
		{"hook", sel(store.RunSelect{Hook: "h1"}), []string{"hook:h1:0001"}},
		{"error contains, case-sensitive", sel(store.RunSelect{ErrorContains: "timeout"}),
			[]string{"a", "sched:d@2026-12-01T07:00:00Z.s1"}},
		{"together", store.RunFilter{CreatedFrom: at(15).UnixNano(), RunSelect: store.RunSelect{Schedule: "d",
			Statuses: []store.RunStatus{store.RunFailed}, ErrorContains: "time"}}, []string{"sched:d@2026-12-01T07:00:00Z.s1"}},
		{"cursor", store.RunFilter{After: "a", Limit: 2, RunSelect: store.RunSelect{Statuses: []store.RunStatus{store.RunFailed}}},
			[]string{"sched:d", "sched:d@2026-12-01T07:00:00Z"}},
		{"ordered", store.RunFilter{Order: store.OrderEnded, Desc: true, RunSelect: store.RunSelect{ErrorContains: "imeout"}},
			[]string{"sched:d@2026-12-01T07:00:00Z.s1", "sched:d@2026-12-01T07:00:00Z", "a"}},
		{"an id no store holds", sel(store.RunSelect{IDs: []string{"a\x00"}}), nil},
		{"a text no store holds", sel(store.RunSelect{ErrorContains: "\xff"}), nil},
	} {
		rs, err := s.Runs(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: Runs(%+v): %v", tc.name, tc.f, err)
		}
		if got := runIDs(rs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Runs(%+v) = %q, want %q", tc.name, tc.f, got, tc.want)
		}
	}
}
