package refund

import (
	"context"
	"os"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
	"github.com/skeinrun/skein/store"
)

// A run of version 1 waits for the promise "approve"; resumed with version
// 2 it completes without it, its recorded check kept (one attempt) and the
// pending promise left in the table.
func TestResumeWithV2(t *testing.T) {
	ctx := context.Background()
	e := hosttest.New(t, "./examples/refund/v1", host.EvictIdle)
	r := e.Drive(e.Start("refund", `{"amount":40}`).ID)
	if r.Status != store.RunSuspended {
		t.Fatalf("v1: status %s (%s), want suspended on the promise approve", r.Status, r.Error)
	}
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./examples/refund/v2"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Host.Deploy(ctx, "refund-v2", wasm)
	if err != nil {
		t.Fatal(err)
	}
	r, err = e.Host.Resume(ctx, r.ID, m.Hash, host.DriveOptions{WaitTimers: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"refund of 40 checked, approved by policy, paid"`; r.Status != store.RunCompleted || string(r.Result) != want {
		t.Fatalf("resumed with v2: %s %s %s, want completed with %s", r.Status, r.Result, r.Error, want)
	}
	outs := e.Verify(r)
	if o := hosttest.Outcome(t, outs, "check"); o.Attempts != 1 {
		t.Errorf("check ran %d times, want once (recorded by v1, replayed by v2)", o.Attempts)
	}
	if o := hosttest.Outcome(t, outs, "approve"); o.Status != store.OutcomePending {
		t.Errorf("approve: %+v, want the pending record of v1 kept", o)
	}
}

// Version 2 still waits for a person above its limit.
func TestV2LargeRefundWaits(t *testing.T) {
	e := hosttest.New(t, "./examples/refund/v2", host.EvictIdle)
	if r := e.Drive(e.Start("refund", `{"amount":500}`).ID); r.Status != store.RunSuspended {
		t.Fatalf("status %s (%s), want suspended on the promise approve", r.Status, r.Error)
	}
}

func TestDeterminism(t *testing.T) {
	for _, v := range []string{"v1", "v2"} {
		t.Run(v, func(t *testing.T) {
			mod := wasmbuild.Build(t, "./examples/refund/"+v)
			skeintest.Check(t, mod, "refund", `{"amount":40}`, skeintest.Options{Schedules: 5})
		})
	}
}

// Before deploying version 2: every run of version 1 waiting for a person
// replays against it (the check is recorded, the promise is left).
func TestUpgradeCheck(t *testing.T) {
	e := hosttest.New(t, "./examples/refund/v1", host.EvictIdle)
	for _, amount := range []string{`{"amount":40}`, `{"amount":400}`} {
		if r := e.Drive(e.Start("refund", amount).ID); r.Status != store.RunSuspended {
			t.Fatalf("v1: status %s (%s), want suspended on the promise approve", r.Status, r.Error)
		}
	}
	r := skeintest.CheckUpgrade(t, e.Store, wasmbuild.Build(t, "./examples/refund/v2"), skeintest.UpgradeOptions{Workflow: "refund"})
	if len(r.Runs) != 2 || !r.OK() {
		t.Fatalf("%s", r.Summary())
	}
}
