package check

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Runs of versions/v1 suspended on their durable timer, checked against
// v2 (a step inserted at the top of positional and of named, alpha
// renamed in rename): only the positional run breaks, with the code
// mismatch a resume meets; and each verdict is what a real resume with
// v2 then does.
func TestCheckUpgradeSuspendedRuns(t *testing.T) {
	ctx := context.Background()
	h := newLiveHost(t, host.Config{Evict: host.EvictIdle, IdleThreshold: 10 * time.Millisecond})
	v1 := h.deploy(t, "./testdata/workflows/versions/v1")
	v2 := h.deploy(t, "./testdata/workflows/versions/v2")
	for _, wf := range []string{"positional", "named", "rename"} {
		for _, n := range []string{"a", "b"} {
			r, err := h.Start(ctx, host.StartOptions{Module: v1.Hash, Workflow: wf, ID: wf + "-" + n})
			if err != nil {
				t.Fatal(err)
			}
			if r, err = h.Drive(ctx, r.ID, host.DriveOptions{}); err != nil || r.Status != store.RunSuspended {
				t.Fatalf("v1 %s: %v %s %s (want suspended on its timer)", wf, err, r.Status, r.Error)
			}
		}
	}
	wasm := wasmOf(t, "./testdata/workflows/versions/v2")
	rep, err := Upgrade(ctx, wasm, UpgradeOptions{Store: h.st, CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.Details(&out, false)
	if len(rep.Runs) != 6 || rep.Broken != 2 || rep.OK() {
		t.Fatalf("want 6 runs, 2 broken:\n%s\n%s", rep.Summary(), out.String())
	}
	for _, r := range rep.Runs {
		wantBroken := strings.HasPrefix(r.ID, "positional-")
		if r.OK() == wantBroken || r.Status != store.RunSuspended || r.Ops == 0 {
			t.Errorf("run %+v: want broken=%v", r, wantBroken)
		}
		if wantBroken && (r.Break != BreakCodeMismatch || r.Key != "1" || r.Recorded != "create_vm" || r.New != "audit" ||
			!strings.Contains(r.Error, `code mismatch at key "1"`)) {
			t.Errorf("run %s: %+v, want a code mismatch at key 1 (create_vm, now audit)", r.ID, r)
		}
		if !wantBroken && r.End != "continues" {
			t.Errorf("run %s: end %q, want continues (the journal is consumed, the run goes on)", r.ID, r.End)
		}
	}
	if want := "upgrade check: 6 runs of long, named, positional, rename (suspended, running): 4 replay cleanly, 2 WOULD BREAK"; rep.Summary() != want {
		t.Errorf("summary %q, want %q", rep.Summary(), want)
	}
	if !strings.Contains(out.String(), `BREAKS positional-a (positional, suspended, 2 records): code mismatch at key "1": recorded "create_vm", the new code: audit`) {
		t.Errorf("details:\n%s", out.String())
	}
	// What a real resume with v2 does agrees with every verdict.
	for _, r := range rep.Runs {
		got, err := h.Resume(ctx, r.ID, v2.Hash, host.DriveOptions{WaitTimers: true})
		if host.IsDivergence(err) != !r.OK() {
			t.Errorf("resume %s with v2: %v (%s), but the check said %+v", r.ID, err, got.Status, r)
		}
		if r.OK() && got.Status != store.RunCompleted {
			t.Errorf("resume %s with v2: %s %s, want completed", r.ID, got.Status, got.Error)
		}
	}
}

// The workflow filter, the statuses and bad options.
func TestCheckUpgradeOptions(t *testing.T) {
	ctx := context.Background()
	h := newLiveHost(t, host.Config{Evict: host.EvictIdle, IdleThreshold: 10 * time.Millisecond})
	v1 := h.deploy(t, "./testdata/workflows/versions/v1")
	for _, wf := range []string{"positional", "named"} {
		r, err := h.Start(ctx, host.StartOptions{Module: v1.Hash, Workflow: wf, ID: wf})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Drive(ctx, r.ID, host.DriveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Start(ctx, host.StartOptions{Module: v1.Hash, Workflow: "positional", ID: "not-started"}); err != nil {
		t.Fatal(err)
	}
	wasm := wasmOf(t, "./testdata/workflows/versions/v2")
	rep, err := Upgrade(ctx, wasm, UpgradeOptions{Store: h.st, Workflow: "named", CacheDir: cacheDir})
	if err != nil || len(rep.Runs) != 1 || rep.Runs[0].ID != "named" || !rep.OK() {
		t.Fatalf("--workflow named: %v %+v", err, rep)
	}
	rep, err = Upgrade(ctx, wasm, UpgradeOptions{Store: h.st, Statuses: []store.RunStatus{store.RunPending}, CacheDir: cacheDir})
	if err != nil || len(rep.Runs) != 1 || rep.Runs[0].ID != "not-started" || !rep.OK() || rep.Runs[0].End != "continues" {
		t.Fatalf("pending runs: %v %+v", err, rep)
	}
	for _, tc := range []struct {
		o    UpgradeOptions
		want string
	}{
		{UpgradeOptions{Store: h.st, Workflow: "nope"}, `the new module has no workflow "nope"`},
		{UpgradeOptions{Store: h.st, Statuses: []store.RunStatus{store.RunCompleted}}, `run status "completed": want pending, running or suspended`},
		{UpgradeOptions{}, "UpgradeOptions.Store is required"},
	} {
		tc.o.CacheDir = cacheDir
		if _, err := Upgrade(ctx, wasm, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
