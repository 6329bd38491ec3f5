package storetest

import (
	"slices"
	"testing"

	"github.com/skeinrun/skein/store"
)

// testDueRunsCreatedCanceled: a run created suspended with a cancellation
// already requested (a store copied or imported as it was) has an
// undelivered cancellation, so it is due from its creation on, as
// store.Store.DueRuns says; one created suspended without is not.
func testDueRunsCreatedCanceled(t *testing.T, s store.Store) {
	canceled := testRun("a-canceled")
	canceled.Status, canceled.Cancel = store.RunSuspended, "stop"
	mustCreateRun(t, s, canceled)
	quiet := testRun("b-quiet")
	quiet.Status = store.RunSuspended
	mustCreateRun(t, s, quiet)
	rs, err := s.DueRuns(t.Context(), 1_000, 0)
	if err != nil {
		t.Fatalf("DueRuns: %v", err)
	}
	if got := runIDs(rs); !slices.Equal(got, []string{"a-canceled"}) {
		t.Errorf("DueRuns = %q, want [a-canceled] (created suspended with a cancellation requested)", got)
	}
}
