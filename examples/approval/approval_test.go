package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
	"github.com/skeinrun/skein/store"
)

func TestApprovalResolvedWhileSuspended(t *testing.T) {
	for _, evict := range []host.Evict{host.EvictIdle, host.EvictAlways} {
		t.Run(string(evict), func(t *testing.T) {
			e := hosttest.New(t, "./examples/approval", evict)
			ctx := context.Background()
			r := e.DriveNoWait(e.Start("approval", `{"request":"r1"}`).ID)
			if r.Status != store.RunSuspended {
				t.Fatalf("status %s (%s), want suspended on the promise and the 24h timer", r.Status, r.Error)
			}
			id := r.ID + ".decision"
			if err := e.Host.Resolve(ctx, id, json.RawMessage(`{"approved":true,"by":"ana"}`), ""); err != nil {
				t.Fatal(err)
			}
			if err := e.Host.Resolve(ctx, id, json.RawMessage(`{"approved":false}`), ""); !errors.Is(err, host.ErrConflict) {
				t.Fatalf("second resolve: %v, want ErrConflict", err)
			}
			// The same outcome again, before its delivery: a retry, nothing changes.
			if err := e.Host.Resolve(ctx, id, json.RawMessage(`{"by": "ana", "approved": true}`), ""); !errors.Is(err, host.ErrAlreadySettled) {
				t.Fatalf("the same value again: %v, want ErrAlreadySettled", err)
			}
			if err := e.Host.Resolve(ctx, r.ID+".nope", nil, "x"); !errors.Is(err, host.ErrNotFound) {
				t.Fatalf("resolve of an unknown promise: %v, want ErrNotFound", err)
			}
			if err := e.Host.Resolve(ctx, r.ID+".deadline", nil, "x"); !errors.Is(err, host.ErrNotFound) {
				t.Fatalf("resolve of a timer: %v, want ErrNotFound", err)
			}
			r = e.DriveNoWait(r.ID)
			if r.Status != store.RunCompleted || string(r.Result) != `"ticket:r1 approved by ana"` {
				t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
			}
			// After its delivery too; an error instead is still a conflict.
			if err := e.Host.Resolve(ctx, id, json.RawMessage(`{"approved":true,"by":"ana"}`), ""); !errors.Is(err, host.ErrAlreadySettled) {
				t.Fatalf("the same value after delivery: %v, want ErrAlreadySettled", err)
			}
			if err := e.Host.Resolve(ctx, id, nil, "no"); !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), `"by":"ana"`) {
				t.Fatalf("an error after a value: %v, want ErrConflict quoting the value", err)
			}
			outs := e.Verify(r)
			if o := hosttest.Outcome(t, outs, "decision"); o.Status != store.OutcomeOK || !o.Waited {
				t.Errorf("decision outcome %+v", o)
			}
			if o := hosttest.Outcome(t, outs, "deadline"); o.Status != store.OutcomePending {
				t.Errorf("the deadline timer should still be pending, got %+v", o)
			}
		})
	}
}

// A promise settled while the run waits live (never evicted) is delivered
// at once, without a replay.
func TestApprovalResolvedLive(t *testing.T) {
	e := hosttest.New(t, "./examples/approval", host.EvictNever)
	ctx := context.Background()
	r := e.Start("approval", `{"request":"r2","timeout":"1h"}`)
	execs := 0
	done := make(chan store.Run, 1)
	go func() {
		got, err := e.Host.Drive(ctx, r.ID, host.DriveOptions{OnExecution: func() { execs++ }})
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	// Resolve as soon as the promise is recorded; the run keeps its instance.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := e.Host.Resolve(ctx, r.ID+".decision", json.RawMessage(`{"approved":false,"by":"bo"}`), "")
		if err == nil {
			break
		}
		if !errors.Is(err, host.ErrNotFound) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := <-done
	if got.Status != store.RunCompleted || string(got.Result) != `"ticket:r2 rejected by bo"` {
		t.Fatalf("run %s %s %s", got.Status, got.Result, got.Error)
	}
	if execs != 1 {
		t.Errorf("%d executions, want 1 (delivered live)", execs)
	}
	e.Verify(got)
}

func TestApprovalDeadline(t *testing.T) {
	r, outs := hosttest.Run(t, "./examples/approval", "approval", `{"request":"r3","timeout":"30ms"}`, host.EvictIdle)
	if r.Status != store.RunCompleted || string(r.Result) != `"ticket:r3 expired after 30ms"` {
		t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
	}
	if o := hosttest.Outcome(t, outs, "decision"); o.Status != store.OutcomePending {
		t.Errorf("decision should still be pending, got %+v", o)
	}
}

// Canceling a suspended run fails its pending promise and timer with a
// cancellation error; the workflow compensates (withdraw) and the run
// ends canceled.
func TestApprovalCanceled(t *testing.T) {
	for _, evict := range []host.Evict{host.EvictIdle, host.EvictAlways} {
		t.Run(string(evict), func(t *testing.T) {
			e := hosttest.New(t, "./examples/approval", evict)
			ctx := context.Background()
			r := e.DriveNoWait(e.Start("approval", `{"request":"r4"}`).ID)
			if r.Status != store.RunSuspended {
				t.Fatalf("status %s", r.Status)
			}
			c, err := e.Host.Cancel(ctx, r.ID, "requester left")
			if err != nil || c.Cancel != "requester left" {
				t.Fatalf("cancel: %+v %v", c, err)
			}
			r = e.DriveNoWait(r.ID)
			if r.Status != store.RunCanceled || !strings.Contains(r.Error, "requester left") {
				t.Fatalf("run %s %q, want canceled with the reason", r.Status, r.Error)
			}
			outs := e.Verify(r)
			if o := hosttest.Outcome(t, outs, "4"); o.Function != "withdraw" || o.Status != store.OutcomeOK || string(o.Value) != `"ticket:r4 withdrawn"` {
				t.Errorf("withdraw %+v", o)
			}
			for _, k := range []string{"decision", "deadline"} {
				if o := hosttest.Outcome(t, outs, k); o.Status != store.OutcomeError || !strings.Contains(o.Error, "canceled: requester left") {
					t.Errorf("%s %+v, want failed by the cancellation", k, o)
				}
			}
			if o := hosttest.Outcome(t, outs, store.CancelKey); o.Orphaned {
				t.Errorf("the cancellation record is marked orphaned")
			}
			if _, err := e.Host.Cancel(ctx, r.ID, "again"); !errors.Is(err, host.ErrTerminal) {
				t.Errorf("cancel of a canceled run: %v, want ErrTerminal", err)
			}
			if err := e.Host.Resolve(ctx, r.ID+".decision", json.RawMessage(`{}`), ""); !errors.Is(err, host.ErrConflict) {
				t.Errorf("resolve after cancel: %v, want ErrConflict", err)
			}
		})
	}
}

// The check settles the promise itself, in turn by schedule: with a
// decision generated from its schema, with an error, or not at all (the
// 24 h deadline wins, in virtual time); every path is replayed from every
// crash point, and the report says how the promise was settled.
func TestApprovalCheck(t *testing.T) {
	r := skeintest.Check(t, wasmbuild.Build(t, "./examples/approval"), "approval", `{"request":"r1"}`, skeintest.Options{Schedules: 30})
	var decided, expired, failed bool
	for _, e := range r.Ends {
		decided = decided || strings.Contains(e.Result, " by ")
		expired = expired || e.Result == `"ticket:r1 expired after 24h0m0s"`
		failed = failed || e.Status == store.RunFailed
	}
	if !decided || !expired || !failed {
		t.Fatalf("ends %+v; want a decision, the deadline and the promise's error each in some schedules", r.Ends)
	}
	hows := map[string]bool{}
	for _, p := range r.Promises {
		if p.Key == "decision" {
			hows[p.How] = true
		}
	}
	if !hows["a value generated from its schema"] || !hows["error"] || !hows["left pending"] {
		t.Errorf("promises %+v; want the decision settled with a value, an error and left pending", r.Promises)
	}
}
