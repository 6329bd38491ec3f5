package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// The run cases of the suite: create, read, list.

func testRun(id string) store.Run {
	return store.Run{
		ID:         id,
		ModuleHash: fmt.Sprintf("%064x", 1),
		Workflow:   "alpha",
		Input:      []byte(`{"n":1}`),
		Status:     store.RunPending,
		Seed:       1<<63 + 5,
		Parent:     "parent-1",
		StartTime:  ts(0).UnixNano(),
		CreatedAt:  ts(1),
		UpdatedAt:  ts(2),
	}
}

func mustCreateRun(t *testing.T, s store.Store, r store.Run) store.Run {
	t.Helper()
	got, created, err := s.CreateRun(t.Context(), r)
	if err != nil {
		t.Fatalf("CreateRun(%s): %v", r.ID, err)
	}
	if !created {
		t.Fatalf("CreateRun(%s): created = false, want true", r.ID)
	}
	return got
}

func mustRun(t *testing.T, s store.Store, id string) store.Run {
	t.Helper()
	r, err := s.Run(t.Context(), id)
	if err != nil {
		t.Fatalf("Run(%s): %v", id, err)
	}
	return r
}

func checkRun(t *testing.T, what string, got, want store.Run) {
	t.Helper()
	if got.ID != want.ID || got.ModuleHash != want.ModuleHash || got.Workflow != want.Workflow ||
		!bytes.Equal(got.Input, want.Input) || got.Status != want.Status || !bytes.Equal(got.Result, want.Result) ||
		got.Error != want.Error || got.Seed != want.Seed || got.Parent != want.Parent ||
		got.StartTime != want.StartTime || got.WakeAt != want.WakeAt ||
		got.Deadline != want.Deadline || got.Cancel != want.Cancel ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func testCreateRun(t *testing.T, s store.Store) {
	r := testRun("run-1")
	got := mustCreateRun(t, s, r)
	checkRun(t, "CreateRun result", got, r)
	checkRun(t, "Run", mustRun(t, s, r.ID), r)

	// Defaults: status pending, timestamps set.
	before := time.Now().Add(-time.Second)
	bare := store.Run{ID: "run-2", ModuleHash: "h", Workflow: "w"}
	got = mustCreateRun(t, s, bare)
	if got.Status != store.RunPending {
		t.Errorf("default status = %q, want pending", got.Status)
	}
	if got.CreatedAt.Before(before) || got.UpdatedAt.Before(before) {
		t.Errorf("default timestamps = %v, %v, want about now", got.CreatedAt, got.UpdatedAt)
	}
	checkRun(t, "Run of bare run", mustRun(t, s, "run-2"), got)
}

func testCreateRunExisting(t *testing.T, s store.Store) {
	r := testRun("run-1")
	mustCreateRun(t, s, r)
	dup := r
	dup.Input = []byte(`{"n":2}`)
	dup.Workflow = "beta"
	dup.Seed = 7
	dup.CreatedAt = ts(50)
	got, created, err := s.CreateRun(t.Context(), dup)
	if err != nil {
		t.Fatalf("CreateRun again: %v", err)
	}
	if created {
		t.Errorf("CreateRun again: created = true, want false")
	}
	checkRun(t, "CreateRun of existing id returns the stored run", got, r)
	checkRun(t, "Run after duplicate create", mustRun(t, s, r.ID), r)
}

func testRunNotFound(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("run-1"))
	if _, err := s.Run(t.Context(), "run-2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run(missing) error = %v, want ErrNotFound", err)
	}
}

func runIDs(rs []store.Run) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

func testRunsFilter(t *testing.T, s store.Store) {
	statuses := map[string]store.RunStatus{
		"r3": store.RunCompleted, "r1": store.RunPending, "r5": store.RunCompleted,
		"r2": store.RunSuspended, "r4": store.RunPending, "r6": store.RunCompleted,
	}
	for _, id := range []string{"r3", "r1", "r5", "r2", "r4", "r6"} {
		r := testRun(id)
		r.Status = statuses[id]
		mustCreateRun(t, s, r)
	}
	ctx := t.Context()
	for _, tc := range []struct {
		f    store.RunFilter
		want []string
	}{
		{store.RunFilter{}, []string{"r1", "r2", "r3", "r4", "r5", "r6"}},
		{store.RunFilter{Status: store.RunCompleted}, []string{"r3", "r5", "r6"}},
		{store.RunFilter{Status: store.RunPending}, []string{"r1", "r4"}},
		{store.RunFilter{Status: store.RunFailed}, nil},
		{store.RunFilter{Limit: 2}, []string{"r1", "r2"}},
		{store.RunFilter{Limit: 2, After: "r2"}, []string{"r3", "r4"}},
		{store.RunFilter{After: "r5"}, []string{"r6"}},
		{store.RunFilter{After: "r6"}, nil},
		{store.RunFilter{Status: store.RunCompleted, Limit: 1, After: "r3"}, []string{"r5"}},
		{store.RunFilter{Status: store.RunCompleted, After: "r5"}, []string{"r6"}},
	} {
		rs, err := s.Runs(ctx, tc.f)
		if err != nil {
			t.Fatalf("Runs(%+v): %v", tc.f, err)
		}
		if got := runIDs(rs); !slices.Equal(got, tc.want) {
			t.Errorf("Runs(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
	rs, err := s.Runs(ctx, store.RunFilter{Status: store.RunPending})
	if err != nil || len(rs) == 0 {
		t.Fatalf("Runs(pending) = %v, %v", rs, err)
	}
	want := testRun("r1")
	checkRun(t, "Runs row", rs[0], want)

	// The default limit is 100.
	for i := range 105 {
		r := testRun(fmt.Sprintf("s%03d", i))
		mustCreateRun(t, s, r)
	}
	rs, err = s.Runs(ctx, store.RunFilter{After: "s"})
	if err != nil {
		t.Fatalf("Runs(default limit): %v", err)
	}
	if len(rs) != 100 {
		t.Errorf("Runs with Limit 0 returned %d runs, want 100", len(rs))
	}
}
