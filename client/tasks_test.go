package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/server"
)

const remoteWorkflows = "./testdata/workflows/remote"

// claimOne claims the next task of activity name as worker w.
func claimOne(t *testing.T, ctx context.Context, c *client.Client, w, name string) client.ClaimedTask {
	t.Helper()
	for range 10 { // each claim waits up to 10s for the task to be queued
		ts, err := c.ClaimTasks(ctx, client.ClaimRequest{Worker: w, Names: []string{name}, Max: 1, WaitMS: 10000})
		if err != nil {
			t.Fatalf("ClaimTasks: %v", err)
		}
		if len(ts) == 1 {
			return ts[0]
		}
	}
	t.Fatalf("no task of %q was queued", name)
	return client.ClaimedTask{}
}

func TestTasks(t *testing.T) {
	_, c, ctx := setup(t, server.Options{})
	deploy(t, c, "remote", remoteWorkflows)
	if _, _, err := c.Start(ctx, client.StartRequest{Module: "remote", Input: json.RawMessage(`{"n":1,"name":"charge"}`), ID: "t1"}); err != nil {
		t.Fatal(err)
	}
	task := claimOne(t, ctx, c, "w1", "charge")
	if task.RunID != "t1" || task.Attempt != 1 || task.Name != "charge" || string(task.Input) != "0" || task.IdempotencyKey != "t1."+task.Key || task.HeartbeatMS <= 0 {
		t.Fatalf("claimed %+v", task)
	}
	ref := task.Ref("w1")
	expiry, err := c.HeartbeatTask(ctx, client.HeartbeatRequest{TaskRef: ref, Progress: json.RawMessage(`{"done":40}`)})
	if err != nil || expiry.Before(task.LeaseExpiry) {
		t.Errorf("HeartbeatTask: %v, %v; want a lease until at least %v", expiry, err, task.LeaseExpiry)
	}
	ts, err := c.RunTasks(ctx, "t1")
	if err != nil || len(ts) != 1 || ts[0].State != "claimed" || ts[0].Worker != "w1" || string(ts[0].Progress) != `{"done":40}` || ts[0].Expiry == nil {
		t.Errorf("RunTasks: %+v, %v", ts, err)
	}
	if v, err := c.Outcomes(ctx, "t1"); err != nil || v.Waiting == nil || len(v.Waiting.Activities) != 1 || v.Waiting.Activities[0].Task == nil || v.Waiting.Activities[0].Task.Worker != "w1" {
		t.Errorf("Outcomes of a run waiting on a claimed task: %+v, %v", v.Waiting, err)
	}
	other := ref
	other.Worker = "w2"
	_, err = c.CompleteTask(ctx, client.CompleteRequest{TaskRef: other, Result: json.RawMessage(`1`)})
	wantError(t, "CompleteTask by another worker", err, http.StatusConflict, client.CodeConflict, "")
	ended, err := c.CompleteTask(ctx, client.CompleteRequest{TaskRef: ref, Result: json.RawMessage(`5`)})
	if err != nil || ended != (client.TaskEnded{Status: "completed"}) {
		t.Errorf("CompleteTask: %+v, %v", ended, err)
	}
	_, err = c.HeartbeatTask(ctx, client.HeartbeatRequest{TaskRef: ref})
	wantError(t, "HeartbeatTask of a completed attempt", err, http.StatusConflict, client.CodeConflict, "")
	_, err = c.FailTask(ctx, client.FailRequest{TaskRef: ref, Error: "late"})
	wantError(t, "FailTask of a completed attempt", err, http.StatusConflict, client.CodeConflict, "")
	if v, err := c.Wait(ctx, "t1", client.WaitOptions{}); err != nil || v.Status != client.StatusCompleted || string(v.Result) != "5" {
		t.Errorf("the run: %s %s, %v; want completed with 5", v.Status, v.Result, err)
	}
	_, err = c.HeartbeatTask(ctx, client.HeartbeatRequest{TaskRef: client.TaskRef{RunID: "nope", Key: "1", Attempt: 1, Worker: "w1"}})
	wantError(t, "HeartbeatTask of an unknown task", err, http.StatusNotFound, client.CodeNotFound, "")
	_, err = c.ClaimTasks(ctx, client.ClaimRequest{Worker: "w1", Names: []string{"charge"}, Max: 1, WaitMS: -1})
	wantError(t, "ClaimTasks with a negative wait", err, http.StatusBadRequest, client.CodeBadRequest, `"wait_ms" must not be negative (got -1)`)
	_, err = c.ClaimTasks(ctx, client.ClaimRequest{Worker: "w1", Names: []string{"charge"}, Max: 0})
	wantError(t, "ClaimTasks of no task", err, http.StatusBadRequest, client.CodeBadRequest, "")
}

func TestTaskRetries(t *testing.T) {
	_, c, ctx := setup(t, server.Options{})
	deploy(t, c, "remote", remoteWorkflows)
	if _, _, err := c.Start(ctx, client.StartRequest{Module: "remote", Input: json.RawMessage(`{"n":1,"name":"flaky","attempts":2}`), ID: "f1"}); err != nil {
		t.Fatal(err)
	}
	first := claimOne(t, ctx, c, "w1", "flaky")
	ended, err := c.FailTask(ctx, client.FailRequest{TaskRef: first.Ref("w1"), Error: "gateway down"})
	if err != nil || ended != (client.TaskEnded{Status: "retry", Retry: true}) {
		t.Fatalf("FailTask of attempt 1 of 2: %+v, %v; want a retry", ended, err)
	}
	second := claimOne(t, ctx, c, "w1", "flaky")
	if second.Attempt != 2 || second.LastError != "gateway down" || second.IdempotencyKey != first.IdempotencyKey {
		t.Errorf("the retry: %+v", second)
	}
	ended, err = c.FailTask(ctx, client.FailRequest{TaskRef: second.Ref("w1"), Error: "still down"})
	if err != nil || ended != (client.TaskEnded{Status: "failed"}) {
		t.Errorf("FailTask of the last attempt: %+v, %v; want failed", ended, err)
	}
	if v, err := c.Wait(ctx, "f1", client.WaitOptions{}); err != nil || v.Status != client.StatusFailed || v.Error == nil || !strings.Contains(*v.Error, "still down") {
		t.Errorf("the run: %+v, %v; want failed with the last error", v, err)
	}
}

// TestClaimEndsWithContext: a claim is a long poll that ends when its
// context does, long before the wait it asked for.
func TestClaimEndsWithContext(t *testing.T) {
	s := newServer(t, server.Options{MaxClaimWait: time.Minute})
	c := newClient(t, s)
	ctx, cancel := context.WithCancel(bounded(t))
	go func() {
		<-s.Claims // the server has the claim: it waits for a task
		cancel()
	}()
	ts, err := c.ClaimTasks(ctx, client.ClaimRequest{Worker: "w1", Names: []string{"never"}, Max: 1, WaitMS: time.Minute.Milliseconds()})
	if !errors.Is(err, context.Canceled) || len(ts) != 0 {
		t.Errorf("ClaimTasks canceled while it waits: %v, %v; want context.Canceled", ts, err)
	}
}
