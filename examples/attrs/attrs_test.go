package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
	"github.com/skeinrun/skein/store/sqlite"
)

// countingStore counts the attribute values committed.
type countingStore struct {
	store.Store
	mu     sync.Mutex
	writes int // RunAttrs entries committed
}

func (s *countingStore) Commit(ctx context.Context, b store.Batch) error {
	err := s.Store.Commit(ctx, b)
	if err == nil {
		s.mu.Lock()
		s.writes += len(b.Attrs)
		s.mu.Unlock()
	}
	return err
}

// deployTicket deploys examples/attrs on h.
func deployTicket(t *testing.T, h *host.Host) store.Module {
	t.Helper()
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./examples/attrs"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(t.Context(), "attrs", wasm)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTicketAttributes: the run's attributes are those of its start
// request and of its SetAttributes ops, typed by their declarations; an
// undeclared one fails its op and the workflow reports it; evicted and
// replayed at every idle point, the run writes each op's values once.
func TestTicketAttributes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := &countingStore{Store: db}
	h, err := host.New(ctx, host.Config{Store: st, Evict: host.EvictAlways, CacheDir: testcache.Shared()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()); db.Close() })
	m := deployTicket(t, h)
	for name, typ := range map[string]store.AttrType{"customer": store.AttrInt, "region": store.AttrString, "stage": store.AttrString,
		"priority": store.AttrFloat, "closed": store.AttrBool, "closed_at": store.AttrTime, "source": store.AttrString} {
		if _, err := h.CreateAttribute(ctx, name, typ); err != nil {
			t.Fatal(err)
		}
	}
	start := func(id string, attrs map[string]any) (store.Run, error) {
		return h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: "ticket", ID: id,
			Input: json.RawMessage(`{"customer":42,"region":"eu","priority":2,"extra":"undeclared"}`), Attributes: attrs})
	}
	if _, err := start("bad", map[string]any{"customer": "42"}); err == nil || !strings.Contains(err.Error(), `search attribute "customer" is a int`) {
		t.Fatalf("start with a string for an int attribute: %v", err)
	}
	if _, err := start("bad", map[string]any{"nope": 1}); err == nil || !strings.Contains(err.Error(), `search attribute "nope" is not declared`) {
		t.Fatalf("start with an undeclared attribute: %v", err)
	}
	if _, err := start("t1", map[string]any{"source": "api", "stage": "new"}); err != nil {
		t.Fatal(err)
	}
	execs := 0
	r, err := h.Drive(ctx, "t1", host.DriveOptions{WaitTimers: true, OnExecution: func() { execs++ }})
	if err != nil || r.Status != store.RunCompleted {
		t.Fatalf("drive: %v %s %s", err, r.Status, r.Error)
	}
	if want := `{"stage":"done","extra_error":"search attribute \"undeclared\" is not declared (skein attribute create undeclared --type T)"}`; string(r.Result) != want {
		t.Errorf("result %s, want %s", r.Result, want)
	}
	if execs < 2 {
		t.Errorf("%d executions: the run was not replayed", execs)
	}
	got, err := h.RunAttributes(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	a := got["t1"]
	if a["customer"] != int64(42) || a["region"] != "eu" || a["stage"] != "done" || a["priority"] != 2.0 || a["closed"] != true || a["source"] != "api" {
		t.Errorf("attributes %v", a)
	}
	if ts, ok := a["closed_at"].(time.Time); !ok || ts.Before(r.CreatedAt.Add(-time.Minute)) {
		t.Errorf("closed_at = %v", a["closed_at"])
	}
	if st.writes != 2 { // the two ops that succeeded; the start's values are the run's creation
		t.Errorf("%d attribute writes committed over %d executions, want 2 (one per op)", st.writes, execs)
	}
	rs, err := h.Runs(ctx, store.RunFilter{Attrs: []store.AttrCond{{Name: "customer", Op: store.AttrEq, Value: int64(42)}}})
	if err != nil || len(rs) != 1 || rs[0].ID != "t1" {
		t.Errorf("runs of customer 42: %v %v", rs, err)
	}
}

// The ticket replays exactly from every crash point, its attrs ops
// included (skein check: no declarations, each value typed as given).
func TestTicketCheck(t *testing.T) {
	t.Parallel()
	skeintest.Check(t, wasmbuild.Build(t, "./examples/attrs"), "ticket", `{"customer":7,"region":"us","priority":0.5}`,
		skeintest.Options{Schedules: 10, ScheduleIndependent: true})
}

// Under a simulation (what skein check runs) there are no declarations:
// each value is taken with the type it has, so no op fails.
func TestTicketSimulation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h, err := host.New(ctx, host.Config{Store: memory.New(), Simulation: &host.Simulation{Seed: 1}, CacheDir: testcache.Shared()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	m := deployTicket(t, h)
	r, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: "ticket", Input: json.RawMessage(`{"customer":1,"extra":"anything"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r, err = h.Drive(ctx, r.ID, host.DriveOptions{WaitTimers: true})
	if err != nil || string(r.Result) != `{"stage":"done"}` {
		t.Fatalf("drive under a simulation: %v %s %s %s", err, r.Status, r.Result, r.Error)
	}
}
