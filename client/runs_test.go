package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/server"
)

const serverWorkflows = "./testdata/workflows/server"

func TestModules(t *testing.T) {
	_, c, ctx := setup(t, server.Options{})
	wasm := module(t, serverWorkflows)
	m, created, err := c.Deploy(ctx, "wf", wasm)
	if err != nil || !created {
		t.Fatalf("Deploy: %+v created %v, %v; want created", m, created, err)
	}
	if m.Name != "wf" || len(m.Hash) != 64 || m.ABIVersion != 1 || !strings.Contains(strings.Join(m.Workflows, ","), "waiter") || m.CreatedAt.IsZero() {
		t.Errorf("Deploy: %+v", m)
	}
	again, created, err := c.Deploy(ctx, "wf-canary", wasm)
	if err != nil || created || again.Hash != m.Hash || strings.Join(again.Names, ",") != "wf,wf-canary" {
		t.Errorf("Deploy of the same bytes: %+v created %v, %v; want the module with both names, not created", again, created, err)
	}
	ms, err := c.Modules(ctx)
	if err != nil || len(ms) != 1 || ms[0].Hash != m.Hash {
		t.Errorf("Modules: %+v, %v", ms, err)
	}
	for _, ref := range []string{"wf-canary", m.Hash} {
		got, err := c.Module(ctx, ref)
		if err != nil || got.Hash != m.Hash {
			t.Errorf("Module(%q): %+v, %v", ref, got, err)
		}
	}
	if got, _ := c.Module(ctx, "wf-canary"); got.Name != "wf-canary" {
		t.Errorf("Module by name: Name %q; want the name asked", got.Name)
	}
	_, err = c.Module(ctx, "nope")
	wantError(t, "Module(nope)", err, http.StatusNotFound, client.CodeNotFound, `no module "nope" (by hash or name)`)
	if !client.IsNotFound(err) || client.IsConflict(err) {
		t.Errorf("IsNotFound/IsConflict of %v: want true/false", err)
	}
	_, _, err = c.Deploy(ctx, "bad", []byte("not wasm"))
	wantError(t, "Deploy of text", err, http.StatusBadRequest, client.CodeInvalidModule, "")
}

func TestRuns(t *testing.T) {
	_, c, ctx := setup(t, server.Options{})
	deploy(t, c, "wf", serverWorkflows)
	req := client.StartRequest{Module: "wf", Workflow: "echo", Input: json.RawMessage(`{"n":7}`), ID: "e1"}
	r, created, err := c.Start(ctx, req)
	if err != nil || !created || r.ID != "e1" || r.Workflow != "echo" || string(r.Input) != `{"n":7}` {
		t.Fatalf("Start: %+v created %v, %v", r, created, err)
	}
	if r2, created, err := c.Start(ctx, req); err != nil || created || r2.ID != "e1" {
		t.Errorf("Start again with the same request: %+v created %v, %v; want the run, not created", r2, created, err)
	}
	_, _, err = c.Start(ctx, client.StartRequest{Module: "wf", Workflow: "echo", Input: json.RawMessage(`8`), ID: "e1"})
	wantError(t, "Start of e1 with another input", err, http.StatusConflict, client.CodeConflict, "")
	_, _, err = c.Start(ctx, client.StartRequest{Module: "wf", Workflow: "nope"})
	wantError(t, "Start of an unknown workflow", err, http.StatusBadRequest, client.CodeBadRequest, "")

	v, err := c.Wait(ctx, "e1", client.WaitOptions{})
	if err != nil || v.Status != client.StatusCompleted || string(v.Result) != `{"n":7}` || v.Run != "e1" {
		t.Fatalf("Wait: %+v, %v; want completed with the input", v, err)
	}
	if len(v.Outcomes) != 1 || v.Outcomes[0].Function != "echo" || v.Outcomes[0].Status != "ok" || v.Waiting != nil {
		t.Errorf("Wait's view: outcomes %+v, waiting %+v", v.Outcomes, v.Waiting)
	}
	if o, err := c.Outcomes(ctx, "e1"); err != nil || o.Status != client.StatusCompleted || len(o.Outcomes) != 1 {
		t.Errorf("Outcomes: %+v, %v", o, err)
	}
	got, err := c.Run(ctx, "e1")
	if err != nil || got.Status != client.StatusCompleted || string(got.Result) != `{"n":7}` || got.UpdatedAt.Before(got.CreatedAt) {
		t.Errorf("Run: %+v, %v", got, err)
	}
	ops, err := c.Ops(ctx, "e1")
	if err != nil || ops.Run.ID != "e1" || ops.ModuleName != "wf" || len(ops.Ops) != 1 || ops.Ops[0].Kind != "step" || ops.Ops[0].Started == nil {
		t.Errorf("Ops: %+v, %v", ops, err)
	}
	leases, err := c.Leases(ctx, "e1")
	if err != nil || len(leases) == 0 || leases[0].Worker == "" || leases[0].Token < 1 || leases[0].ReleasedAt == nil {
		t.Errorf("Leases: %+v, %v; want the released claim of the worker that ran it", leases, err)
	}
	if ts, err := c.RunTasks(ctx, "e1"); err != nil || len(ts) != 0 {
		t.Errorf("RunTasks of a run without remote calls: %+v, %v", ts, err)
	}
	_, err = c.Cancel(ctx, "e1", "too late")
	wantError(t, "Cancel of an ended run", err, http.StatusConflict, client.CodeConflict, `run "e1" has ended (completed); it cannot be canceled`)
	for what, call := range map[string]func() error{
		"Run":      func() error { _, err := c.Run(ctx, "nope"); return err },
		"Outcomes": func() error { _, err := c.Outcomes(ctx, "nope"); return err },
		"Ops":      func() error { _, err := c.Ops(ctx, "nope"); return err },
		"Leases":   func() error { _, err := c.Leases(ctx, "nope"); return err },
		"RunTasks": func() error { _, err := c.RunTasks(ctx, "nope"); return err },
		"Cancel":   func() error { _, err := c.Cancel(ctx, "nope", ""); return err },
		"Wait":     func() error { _, err := c.Wait(ctx, "nope", client.WaitOptions{}); return err },
	} {
		wantError(t, what+" of an unknown run", call(), http.StatusNotFound, client.CodeNotFound, `no run "nope"`)
	}
}

func TestRunsPages(t *testing.T) {
	_, c, ctx := setup(t, server.Options{})
	deploy(t, c, "wf", serverWorkflows)
	for i := range 3 {
		if _, _, err := c.Start(ctx, client.StartRequest{Module: "wf", Workflow: "echo", Input: json.RawMessage(`1`), ID: fmt.Sprintf("p%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Start(ctx, client.StartRequest{Module: "wf", Workflow: "waiter", ID: "w"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.Wait(ctx, fmt.Sprintf("p%d", i), client.WaitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	f := client.RunFilter{Status: client.StatusCompleted, Limit: 2}
	for pages := 0; pages < 3; pages++ {
		l, err := c.Runs(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.Runs {
			ids = append(ids, r.ID)
		}
		if f.Cursor = l.NextCursor; f.Cursor == "" {
			break
		}
	}
	if strings.Join(ids, ",") != "p0,p1,p2" {
		t.Errorf("completed runs by pages of 2: %v; want p0,p1,p2", ids)
	}
	if l, err := c.Runs(ctx, client.RunFilter{}); err != nil || len(l.Runs) != 4 || l.NextCursor != "" {
		t.Errorf("Runs: %d runs, cursor %q, %v; want 4 on one page", len(l.Runs), l.NextCursor, err)
	}
	_, err := c.Runs(ctx, client.RunFilter{Status: "sleeping"})
	wantError(t, "Runs of an unknown status", err, http.StatusBadRequest, client.CodeBadRequest, "")
	_, err = c.Runs(ctx, client.RunFilter{Limit: 5000})
	wantError(t, "Runs with limit 5000", err, http.StatusBadRequest, client.CodeBadRequest, `limit "5000": want a number from 1 to 1000`)
}

func TestPromises(t *testing.T) {
	_, c, ctx := setup(t, server.Options{})
	deploy(t, c, "wf", serverWorkflows)
	for _, id := range []string{"yes", "no"} {
		if _, _, err := c.Start(ctx, client.StartRequest{Module: "wf", Workflow: "waiter", ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := c.Wait(ctx, "yes", client.WaitOptions{Issued: "approve"})
	if err != nil || !v.HasKey("approve") || client.Ended(v.Status) || v.Waiting == nil || len(v.Waiting.Promises) != 1 {
		t.Fatalf("Wait until approve is issued: %+v, %v", v, err)
	}
	if p := v.Waiting.Promises[0]; p.ID != "yes.approve" || p.Resolve != "skein resolve yes.approve --value 'JSON'" {
		t.Errorf("waiting on %+v", p)
	}
	_, err = c.ResolveValue(ctx, "yes.approve", map[string]int{"a": 1})
	wantError(t, "ResolveValue with an object for a string", err, http.StatusBadRequest, client.CodeBadRequest, "")
	res, err := c.ResolveValue(ctx, "yes.approve", "ok")
	if err != nil || res != (client.Resolved{Promise: "yes.approve", Status: "ok"}) {
		t.Errorf("ResolveValue: %+v, %v", res, err)
	}
	res, err = c.Resolve(ctx, "yes.approve", client.ResolveRequest{Value: json.RawMessage(`"ok"`)})
	if err != nil || !res.AlreadySettled || res.Status != "ok" {
		t.Errorf("Resolve again with the same value: %+v, %v; want already settled", res, err)
	}
	_, err = c.ResolveValue(ctx, "yes.approve", "other")
	wantError(t, "ResolveValue with another value", err, http.StatusConflict, client.CodeConflict, "")
	if v, err := c.Wait(ctx, "yes", client.WaitOptions{}); err != nil || v.Status != client.StatusCompleted || string(v.Result) != `"approved: ok"` {
		t.Errorf("Wait after the settlement: %s %s, %v", v.Status, v.Result, err)
	}

	if _, err := c.Wait(ctx, "no", client.WaitOptions{Issued: "approve"}); err != nil {
		t.Fatal(err)
	}
	res, err = c.ResolveError(ctx, "no.approve", "refused")
	if err != nil || res.Status != "error" || res.AlreadySettled {
		t.Errorf("ResolveError: %+v, %v", res, err)
	}
	v, err = c.Wait(ctx, "no", client.WaitOptions{})
	if err != nil || v.Status != client.StatusFailed || v.Error == nil || !strings.Contains(*v.Error, "refused") {
		t.Errorf("Wait after an error settlement: %+v, %v; want failed with the error", v, err)
	}
	_, err = c.ResolveValue(ctx, "nope.approve", "x")
	wantError(t, "ResolveValue of an unknown promise", err, http.StatusNotFound, client.CodeNotFound, "")
	_, err = c.Resolve(ctx, "no.approve", client.ResolveRequest{})
	wantError(t, "Resolve without value or error", err, http.StatusBadRequest, client.CodeBadRequest, `give "value" (any JSON) or "error" (a non-empty string)`)
}

func TestCancelAndWaitEnds(t *testing.T) {
	_, c, ctx := setup(t, server.Options{})
	deploy(t, c, "wf", serverWorkflows)
	if _, _, err := c.Start(ctx, client.StartRequest{Module: "wf", Workflow: "sleeper", Input: json.RawMessage(`{"ms":3600000}`), ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	// A wait ends with its context: canceled once the run has been read
	// waiting on its timer.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reads := 0
	v, err := c.Wait(wctx, "s1", client.WaitOptions{Progress: func(id string, v client.OutcomeView, err error) {
		reads++
		if v.Waiting != nil && len(v.Waiting.Timers) == 1 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || v.Run != "s1" || client.Ended(v.Status) || v.Waiting == nil || reads == 0 {
		t.Fatalf("Wait canceled: %+v after %d reads, %v; want context.Canceled with the last view", v, reads, err)
	}
	r, err := c.Cancel(ctx, "s1", "changed my mind")
	if err != nil || r.CancelReason != "changed my mind" {
		t.Fatalf("Cancel: %+v, %v", r, err)
	}
	if v, err := c.Wait(ctx, "s1", client.WaitOptions{}); err != nil || v.Status != client.StatusCanceled {
		t.Errorf("Wait after Cancel: %s, %v; want canceled", v.Status, err)
	}
}

func TestWaitFollowsContinueAsNew(t *testing.T) {
	_, c, ctx := setup(t, server.Options{})
	deploy(t, c, "cont", "./testdata/workflows/continue")
	if _, _, err := c.Start(ctx, client.StartRequest{Module: "cont", Workflow: "loop", Input: json.RawMessage(`{"per":2,"total":5}`), ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	v, err := c.Wait(ctx, "c1", client.WaitOptions{})
	if err != nil || v.Status != client.StatusContinued || v.ContinuedAs != "c1~2" {
		t.Fatalf("Wait without Follow: %s continued as %q, %v; want continued as c1~2", v.Status, v.ContinuedAs, err)
	}
	var seen []string
	v, err = c.Wait(ctx, "c1", client.WaitOptions{Follow: true, Progress: func(id string, _ client.OutcomeView, _ error) {
		if len(seen) == 0 || seen[len(seen)-1] != id {
			seen = append(seen, id)
		}
	}})
	if err != nil || v.Run != "c1~3" || v.Status != client.StatusCompleted || v.ContinuedFrom != "c1~2" {
		t.Fatalf("Wait with Follow: %s %s, %v; want c1~3 completed", v.Run, v.Status, err)
	}
	var st struct{ N, Runs int }
	if err := json.Unmarshal(v.Result, &st); err != nil || st.N != 5 || st.Runs != 3 {
		t.Errorf("the chain's result %s: %v", v.Result, err)
	}
	if strings.Join(seen, ",") != "c1,c1~2,c1~3" {
		t.Errorf("Follow read %v; want c1, c1~2, c1~3", seen)
	}
}
