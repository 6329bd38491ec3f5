package storetest

import (
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// testTraceParent: a run's TraceParent is stored at creation, by
// CreateRun, CreateClaimedRun and a batch's Creates, and run updates
// keep it; a task's TraceParent is stored when it is queued and read by
// claims, Task and Tasks.
func testTraceParent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := testRun("tp1")
	r.TraceParent = tp
	mustCreateRun(t, s, r)
	if _, _, err := s.CreateClaimedRun(ctx, store.Run{ID: "tp2", ModuleHash: "h", Workflow: "w", TraceParent: tp}, "w1", 1_000, time.Minute); err != nil {
		t.Fatal(err)
	}
	c := testRun("tp3")
	c.TraceParent = tp
	mustCommit(t, s, store.Batch{Creates: []store.Run{c}})
	mustCreateRun(t, s, testRun("none"))
	upd := mustRun(t, s, "tp1")
	upd.Status, upd.TraceParent = store.RunRunning, ""
	mustCommit(t, s, store.Batch{Runs: []store.Run{upd}})
	for _, id := range []string{"tp1", "tp2", "tp3"} {
		if got := mustRun(t, s, id).TraceParent; got != tp {
			t.Errorf("run %s: TraceParent %q, want %q", id, got, tp)
		}
	}
	if got := mustRun(t, s, "none").TraceParent; got != "" {
		t.Errorf("run none: TraceParent %q, want empty", got)
	}
	task := newTask("tp1", "1", "charge")
	task.TraceParent = tp
	queueTask(t, s, task, newTask("tp1", "2", "charge"))
	got, err := s.Task(ctx, "tp1", "1")
	if err != nil || got.TraceParent != tp {
		t.Errorf("Task(tp1, 1): TraceParent %q, %v; want %q", got.TraceParent, err, tp)
	}
	claimed := mustClaimTasks(t, s, "w1", taskNow, 10, "charge")
	want := map[string]string{"1": tp, "2": ""}
	if len(claimed) != 2 {
		t.Fatalf("claimed %d tasks, want 2", len(claimed))
	}
	for _, ct := range claimed {
		if ct.TraceParent != want[ct.Key] {
			t.Errorf("claimed task %s: TraceParent %q, want %q", ct.Key, ct.TraceParent, want[ct.Key])
		}
	}
	for _, lt := range mustTasks(t, s, "tp1") {
		if lt.TraceParent != want[lt.Key] {
			t.Errorf("Tasks: task %s: TraceParent %q, want %q", lt.Key, lt.TraceParent, want[lt.Key])
		}
	}
}
