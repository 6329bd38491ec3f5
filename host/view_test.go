package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
)

// viewOf returns namespace ns's view of h.
func viewOf(t *testing.T, h *testHost, ns string) Client {
	t.Helper()
	v, err := h.In(ns)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestViewIsolation: two namespaces deploy the same module, start runs
// of the same id, settle a child run's promise and list what they have;
// neither sees, nor reaches, the other's.
func TestViewIsolation(t *testing.T) {
	h := newTestHost(t, Config{})
	ctx := context.Background()
	wasm, err := os.ReadFile(wasmbuild.Build(t, featuresPkg))
	if err != nil {
		t.Fatal(err)
	}
	a, b := viewOf(t, h, "acme"), viewOf(t, h, "beta")
	ma, err := a.Deploy(ctx, "features", wasm)
	if err != nil {
		t.Fatal(err)
	}
	if ma.Name != "features" || !slices.Equal(ma.Names, []string{"features"}) || ma.Namespaces != nil {
		t.Errorf("acme's deploy = name %q names %q namespaces %q; want features, [features], none shown", ma.Name, ma.Names, ma.Namespaces)
	}
	if _, err := b.Module(ctx, ma.Hash); !errors.Is(err, ErrNotFound) {
		t.Errorf("beta: Module(acme's hash) = %v; want not found (beta never stored it)", err)
	}
	if _, err := b.Start(ctx, StartOptions{Module: ma.Hash, Workflow: "parent", ID: "r1"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("beta: Start with acme's module hash = %v; want not found", err)
	}
	if _, err := b.Deploy(ctx, "", wasm); err != nil { // the same bytes, unnamed
		t.Fatal(err)
	}
	if _, err := b.Module(ctx, "features"); !errors.Is(err, ErrNotFound) {
		t.Errorf("beta: Module(features), acme's name = %v; want not found", err)
	}
	for _, v := range []Client{a, b} {
		r, err := v.Start(ctx, StartOptions{Module: ma.Hash, Workflow: "parent", Input: json.RawMessage(`{"child":"waiter"}`), ID: "r1"})
		if err != nil || r.ID != "r1" {
			t.Fatalf("Start(r1) = %+v, %v; want run r1", r.ID, err)
		}
	}
	for _, id := range []string{"acme/r1", "beta/r1"} {
		if r := drive(t, h, id, DriveOptions{}); r.Status != store.RunSuspended {
			t.Fatalf("%s: %s %s; want suspended on its child", id, r.Status, r.Error)
		}
		if c := drive(t, h, id+".1", DriveOptions{}); c.Status != store.RunSuspended || c.Parent != id {
			t.Fatalf("child of %s: %+v; want suspended, parent %s", id, c, id)
		}
	}
	if err := a.Resolve(ctx, "r1.1.ok", json.RawMessage(`"yes"`), ""); err != nil {
		t.Fatal(err)
	}
	drive(t, h, "acme/r1.1", DriveOptions{})
	if r := drive(t, h, "acme/r1", DriveOptions{}); r.Status != store.RunCompleted {
		t.Fatalf("acme/r1: %s %s", r.Status, r.Error)
	}
	if r, err := b.Run(ctx, "r1"); err != nil || r.Status != store.RunSuspended || r.ID != "r1" {
		t.Errorf("beta's r1 after acme settled its own = %+v, %v; want suspended", r, err)
	}
	if c, err := a.Run(ctx, "r1.1"); err != nil || c.Parent != "r1" || c.ID != "r1.1" {
		t.Errorf("acme: Run(r1.1) = %+v, %v; want the child, parent r1, ids local", c, err)
	}
	for _, bad := range []string{"acme/r1", "../r1", "beta/r1"} {
		if _, err := a.Run(ctx, bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("acme: Run(%q) = %v; want not found", bad, err)
		}
	}
	if err := b.Resolve(ctx, "acme/r1.1.ok", nil, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("beta: Resolve(acme/r1.1.ok) = %v; want not found", err)
	}
	checkViewLists(t, ctx, h, a, b)
}

// checkViewLists: each namespace lists its own runs and modules, with
// local ids; the host lists every namespace's.
func checkViewLists(t *testing.T, ctx context.Context, h *testHost, a, b Client) {
	t.Helper()
	ra, err := a.Runs(ctx, store.RunFilter{})
	if err != nil || !slices.Equal(runIDsOf(ra), []string{"r1", "r1.1"}) {
		t.Errorf("acme: Runs = %q, %v; want [r1 r1.1]", runIDsOf(ra), err)
	}
	rd, err := viewOf(t, h, store.DefaultNamespace).Runs(ctx, store.RunFilter{})
	if err != nil || len(rd) != 0 {
		t.Errorf("default: Runs = %q, %v; want none", runIDsOf(rd), err)
	}
	all, err := h.Runs(ctx, store.RunFilter{})
	if err != nil || len(all) != 4 {
		t.Errorf("host: Runs = %q, %v; want every namespace's 4", runIDsOf(all), err)
	}
	mb, err := b.Modules(ctx)
	if err != nil || len(mb) != 1 || mb[0].Name != "" || mb[0].DeployedNames != nil {
		t.Errorf("beta: Modules = %+v, %v; want its unnamed module, acme's name not shown", mb, err)
	}
	if _, err := a.Runs(ctx, store.RunFilter{RunSelect: store.RunSelect{Parent: "beta/r1"}}); err == nil {
		t.Error("acme: Runs with parent beta/r1 = nil error; want the '/' refused")
	}
}

// TestViewSchedulesAttrsEvents: schedules, attribute declarations and
// run events are each namespace's own.
func TestViewSchedulesAttrsEvents(t *testing.T) {
	h := newTestHost(t, Config{})
	ctx := context.Background()
	wasm, err := os.ReadFile(wasmbuild.Build(t, featuresPkg))
	if err != nil {
		t.Fatal(err)
	}
	a, b := viewOf(t, h, "acme"), viewOf(t, h, "beta")
	if _, err := a.Deploy(ctx, "features", wasm); err != nil {
		t.Fatal(err)
	}
	si, err := a.CreateSchedule(ctx, ScheduleOptions{Name: "nightly", Cron: "@daily", Module: "features", Workflow: "parent", Input: json.RawMessage(`{}`)})
	if err != nil || si.Name != "nightly" || si.Module != "features" {
		t.Fatalf("CreateSchedule = %+v, %v; want nightly of features, local", si, err)
	}
	if _, err := b.CreateSchedule(ctx, ScheduleOptions{Name: "nightly", Cron: "@daily", Module: "features"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("beta: a schedule of acme's module name = %v; want not found", err)
	}
	if ss, err := b.Schedules(ctx); err != nil || len(ss) != 0 {
		t.Errorf("beta: Schedules = %+v, %v; want none", ss, err)
	}
	sub := a.Subscribe(SubscribeOptions{})
	defer sub.Close()
	subB := b.Subscribe(SubscribeOptions{})
	defer subB.Close()
	r, err := a.TriggerSchedule(ctx, "nightly")
	if err != nil || !strings.HasPrefix(r.ID, "sched:nightly@") {
		t.Fatalf("TriggerSchedule = %+v, %v; want a run sched:nightly@…", r.ID, err)
	}
	if _, err := h.Run(ctx, "acme/"+r.ID); err != nil {
		t.Errorf("the schedule's run is not acme/%s in the host: %v", r.ID, err)
	}
	drive(t, h, "acme/"+r.ID, DriveOptions{})
	select {
	case ev := <-sub.C:
		if ev.RunID != r.ID {
			t.Errorf("acme's event names run %q; want %q (local)", ev.RunID, r.ID)
		}
	case <-time.After(10 * time.Second):
		t.Error("acme's subscription got no event of its run")
	}
	select {
	case ev := <-subB.C:
		t.Errorf("beta's subscription got an event of acme's run: %+v", ev)
	default:
	}
	if _, err := a.CreateAttribute(ctx, "customer", store.AttrInt); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateAttribute(ctx, "customer", store.AttrString); err != nil {
		t.Fatalf("beta: declaring acme's attribute name: %v; want its own", err)
	}
	ds, err := b.Attributes(ctx)
	if err != nil || len(ds) != 1 || ds[0].Name != "customer" || ds[0].Type != store.AttrString {
		t.Errorf("beta: Attributes = %+v, %v; want its customer string", ds, err)
	}
}

// TestViewTasks: a namespace's workers claim the tasks of its runs only,
// by local activity names, and complete them; the other namespace's
// task of the same activity stays queued for its own workers.
func TestViewTasks(t *testing.T) {
	h := newTestHost(t, Config{RemoteActivities: true})
	ctx := context.Background()
	wctx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- h.Work(wctx, WorkOptions{Poll: 20 * time.Millisecond}) }()
	defer func() { stop(); <-worked }()
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/remote"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := viewOf(t, h, "acme"), viewOf(t, h, "beta")
	for _, v := range []Client{a, b} {
		if _, err := v.Deploy(ctx, "remote", wasm); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Start(ctx, StartOptions{Module: "remote", Workflow: "calls", Input: json.RawMessage(`{"n":1,"name":"echo"}`), ID: "c1"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"acme/c1", "beta/c1"} { // both tasks queued first
		for i := 0; ; i++ {
			if got, err := h.Tasks(ctx, id); err == nil && len(got) == 1 {
				break
			} else if i == 500 {
				t.Fatalf("%s has no task after 10 s: %+v, %v", id, got, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ts, err := a.ClaimTasks(ctx, ClaimOptions{Worker: "wa", Names: []string{"echo"}, Max: 10, Wait: 10 * time.Second})
	if err != nil || len(ts) != 1 || ts[0].RunID != "c1" || ts[0].Name != "echo" {
		t.Fatalf("acme's claim = %+v, %v; want its one task, run c1, activity echo (local)", ts, err)
	}
	if got, err := h.Tasks(ctx, "beta/c1"); err != nil || len(got) != 1 || got[0].State != store.TaskQueued {
		t.Errorf("beta's task after acme's claim: %+v, %v; want it queued", got, err)
	}
	if _, err := a.ClaimTasks(ctx, ClaimOptions{Worker: "wa", Names: []string{"beta/echo"}, Max: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("acme's claim of beta/echo: %v; want the '/' refused", err)
	}
	if err := b.CompleteTask(ctx, TaskRef{RunID: "c1", Key: ts[0].Key, Attempt: ts[0].Attempt, Worker: "wa"}, json.RawMessage(`0`)); err == nil {
		t.Error("beta completed acme's task by its local run id; want it refused")
	}
	if err := a.CompleteTask(ctx, TaskRef{RunID: "c1", Key: ts[0].Key, Attempt: ts[0].Attempt, Worker: "wa"}, json.RawMessage(`0`)); err != nil {
		t.Fatal(err)
	}
	if r, err := a.Await(ctx, "c1"); err != nil || r.Status != store.RunCompleted {
		t.Errorf("acme's c1 = %+v, %v; want completed", r.Status, err)
	}
	tb, err := b.ClaimTasks(ctx, ClaimOptions{Worker: "wb", Names: []string{"echo"}, Max: 10, Wait: 10 * time.Second})
	if err != nil || len(tb) != 1 || tb[0].RunID != "c1" {
		t.Errorf("beta's claim = %+v, %v; want its own task", tb, err)
	}
}
