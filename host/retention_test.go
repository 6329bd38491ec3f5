package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// retentionRuns makes, on h, the runs of the retention tests: "done"
// (completed), the chain "chain" whose last run "chain~3" waits for a
// promise, and "fam", which waits after its child (returned) completed.
func retentionRuns(t *testing.T, h *testHost) (child string) {
	t.Helper()
	ctx := t.Context()
	m := h.deploy(t, continueModule)
	if r := h.runToEnd(t, m, "loop", `{"per":5,"total":1}`, "done"); r.Status != store.RunCompleted {
		t.Fatalf("run done: %s %s", r.Status, r.Error)
	}
	h.runToEnd(t, m, "waitchain", `0`, "chain")
	for _, id := range []string{"chain~2", "chain~3"} {
		if _, err := h.Drive(ctx, id, DriveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.runToEnd(t, m, "family", `{}`, "fam")
	rs, err := h.st.Runs(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Parent == "fam" {
			child = r.ID
		}
	}
	want := map[string]store.RunStatus{"done": store.RunCompleted, "chain": store.RunContinued, "chain~2": store.RunContinued,
		"chain~3": store.RunSuspended, "fam": store.RunSuspended, child: store.RunCompleted}
	for id, st := range want {
		if r, err := h.st.Run(ctx, id); err != nil || r.Status != st {
			t.Fatalf("run %q: %s, %v; want %s", id, r.Status, err, st)
		}
	}
	return child
}

// TestPruneKeepsWhatLiveRunsNeed: Prune deletes the ended run and keeps
// the ended links of a chain whose last run waits, and the ended child of
// a parent that waits; DeleteRun refuses them, naming the rule.
func TestPruneKeepsWhatLiveRunsNeed(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	child := retentionRuns(t, h)
	ctx := t.Context()
	later := time.Now().Add(time.Hour)
	dry, err := h.Prune(ctx, later, true)
	if err != nil || dry.Runs != 1 || !slices.Equal(dry.IDs, []string{"done"}) {
		t.Fatalf("Prune(dry run) = %+v, %v; want run done only", dry, err)
	}
	if _, err := h.Run(ctx, "done"); err != nil {
		t.Fatalf("run done after a dry run: %v", err)
	}
	rep, err := h.Prune(ctx, later, false)
	if err != nil || rep.Runs != 1 || !slices.Equal(rep.IDs, dry.IDs) {
		t.Fatalf("Prune = %+v, %v; want what the dry run found", rep, err)
	}
	if _, err := h.Run(ctx, "done"); !errors.Is(err, ErrNotFound) {
		t.Errorf("run done after the prune: %v, want not found", err)
	}
	if o, err := h.st.Outcomes(ctx, "done"); err != nil || len(o) != 0 {
		t.Errorf("outcomes of run done after the prune: %d, %v; want none", len(o), err)
	}
	for id, rule := range map[string]string{
		"chain":   "the last run of its continue-as-new chain, chain~3, has not ended",
		"chain~2": "the last run of its continue-as-new chain, chain~3, has not ended",
		child:     "its parent run fam has not ended",
		"fam":     "it has not ended (status suspended)",
	} {
		err := h.DeleteRun(ctx, id)
		if !errors.Is(err, ErrConflict) || !errors.Is(err, store.ErrRunNeeded) || !strings.Contains(err.Error(), rule) {
			t.Errorf("DeleteRun(%s) = %v, want a conflict naming %q", id, err, rule)
		}
	}
	if rep, err := h.Prune(ctx, later, false); err != nil || rep.Runs != 0 {
		t.Errorf("a second Prune = %+v, %v; want nothing deleted", rep, err)
	}
	if err := h.DeleteRun(ctx, "done"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteRun(done) after its prune = %v, want not found", err)
	}
}

// TestPrunerOfWork: Work's pruner deletes, by the clock it is given, the
// runs that ended more than Config.Retention ago: nothing while the
// clock is now, the ended run once the clock passes its retention, and
// the chain once its last run ended too.
func TestPrunerOfWork(t *testing.T) {
	t.Parallel()
	var ahead atomic.Int64 // how far the pruner's clock is ahead of the wall clock
	h := newTestHost(t, Config{Retention: time.Hour, PruneEvery: 5 * time.Millisecond,
		Clock: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	retentionRuns(t, h)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.Work(ctx, WorkOptions{Poll: 10 * time.Millisecond}) }()
	defer func() { stop(); <-done }()
	gone := func(ids ...string) bool {
		for _, id := range ids {
			if _, err := h.st.Run(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
				return false
			}
		}
		return true
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10s for %s", what)
			}
		}
	}
	time.Sleep(50 * time.Millisecond) // ten prunes or so
	if _, err := h.st.Run(t.Context(), "done"); err != nil {
		t.Fatalf("run done within its retention: %v", err)
	}
	ahead.Store(int64(2 * time.Hour))
	waitFor("run done to be pruned", func() bool { return gone("done") })
	if gone("chain") || gone("fam") {
		t.Fatal("the pruner deleted runs a live run needs")
	}
	if err := h.Resolve(t.Context(), "chain~3.go", json.RawMessage(`"now"`), ""); err != nil {
		t.Fatal(err)
	}
	waitFor("the ended chain to be pruned", func() bool { return gone("chain", "chain~2", "chain~3") })
	// The counter counts a batch once it is committed.
	waitFor("skein_runs_pruned_total to count 4 runs", func() bool { return h.metrics.NS("").RunsPruned.Load() == 4 })
}

// TestPrunerByNamespace: each namespace keeps ended runs for its own
// retention, or the server's where it keeps that one; forever is
// forever.
func TestPrunerByNamespace(t *testing.T) {
	t.Parallel()
	var ahead atomic.Int64
	h := newTestHost(t, Config{Retention: 10 * time.Hour, PruneEvery: 5 * time.Millisecond,
		Clock: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	ctx := t.Context()
	hour, forever := time.Hour, time.Duration(0)
	for name, keep := range map[string]*time.Duration{"short": &hour, "keep": &forever, "server": nil} {
		if _, err := h.CreateNamespace(ctx, name, NamespaceOptions{Retention: keep}); err != nil {
			t.Fatal(err)
		}
	}
	m := h.deploy(t, continueModule)
	for _, id := range []string{"short/done", "keep/done", "server/done", "done"} {
		if r := h.runToEnd(t, m, "loop", `{"per":5,"total":1}`, id); r.Status != store.RunCompleted {
			t.Fatalf("run %s: %s %s", id, r.Status, r.Error)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.Work(wctx, WorkOptions{Poll: 10 * time.Millisecond}) }()
	defer func() { stop(); <-done }()
	exists := func(id string) bool {
		_, err := h.st.Run(ctx, id)
		return !errors.Is(err, store.ErrNotFound)
	}
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10s for %s", what)
			}
		}
	}
	ahead.Store(int64(2 * time.Hour)) // past short's hour, within the server's 10
	waitUntil("short/done to be pruned", func() bool { return !exists("short/done") })
	for _, id := range []string{"keep/done", "server/done", "done"} {
		if !exists(id) {
			t.Errorf("%s was pruned 2h after its end; its retention is longer", id)
		}
	}
	ahead.Store(int64(11 * time.Hour)) // past the server's
	waitUntil("server/done and done to be pruned", func() bool { return !exists("server/done") && !exists("done") })
	if !exists("keep/done") {
		t.Error("keep/done was pruned; its namespace keeps everything")
	}
}
