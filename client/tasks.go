package client

import (
	"context"
	"encoding/json"
	"time"
)

// The worker protocol (docs/api.md, "Activity workers"): a worker in
// another process claims the activity tasks of runs, keeps each attempt's
// lease with heartbeats and reports its end. Package worker is built on
// these calls.

// ClaimRequest is the body of POST /v1/tasks/claim.
type ClaimRequest struct {
	Worker string   `json:"worker"`  // the worker's identity; live workers need different ones
	Names  []string `json:"names"`   // the activities it serves
	Max    int      `json:"max"`     // how many tasks it takes at most, 1 to 256
	WaitMS int64    `json:"wait_ms"` // how long to wait for one (a long poll, capped by --max-claim-wait); 0: answer at once
}

// ClaimedTask is a claimed attempt of an activity call.
type ClaimedTask struct {
	RunID   string          `json:"run_id"`  // the run that made the call
	Key     string          `json:"key"`     // the call's key in the run
	Attempt int             `json:"attempt"` // from 1
	Name    string          `json:"name"`    // the activity's name
	Input   json.RawMessage `json:"input"`   // the call's input
	// IdempotencyKey is the same for every attempt of the call and
	// unique across runs: "{run_id}.{key}".
	IdempotencyKey string `json:"idempotency_key"`
	// LeaseExpiry is when the attempt is failed as timed out unless a
	// heartbeat extends it; HeartbeatMS is how often to send one.
	LeaseExpiry time.Time `json:"lease_expiry"`
	HeartbeatMS int64     `json:"heartbeat_ms"`
	// TimeoutMS bounds the attempt (the call's timeout); 0: none.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// LastError is the previous attempt's error.
	LastError string `json:"last_error,omitempty"`
	// Traceparent is the W3C traceparent of the attempt's span when the
	// server traces runs (docs/observability.md): the parent of the
	// activity's own spans (package worker hands it over in
	// activity.Info.Traceparent).
	Traceparent string `json:"traceparent,omitempty"`
}

// Ref returns the TaskRef of the attempt, held by worker.
func (t ClaimedTask) Ref(worker string) TaskRef {
	return TaskRef{RunID: t.RunID, Key: t.Key, Attempt: t.Attempt, Worker: worker}
}

// ClaimResponse answers a claim: no task when the wait ended first.
type ClaimResponse struct {
	Tasks []ClaimedTask `json:"tasks"` // the attempts the worker now holds
}

// TaskRef names the attempt a heartbeat, completion or failure is for,
// and the worker that holds it.
type TaskRef struct {
	RunID   string `json:"run_id"`  // the run that made the call
	Key     string `json:"key"`     // the call's key in the run
	Attempt int    `json:"attempt"` // the attempt, from 1
	Worker  string `json:"worker"`  // the worker that claimed it
}

// HeartbeatRequest is the body of POST /v1/tasks/heartbeat.
type HeartbeatRequest struct {
	TaskRef
	Progress json.RawMessage `json:"progress,omitempty"` // optional JSON, shown with the task
}

// HeartbeatResponse answers a heartbeat.
type HeartbeatResponse struct {
	LeaseExpiry time.Time `json:"lease_expiry"` // the lease's new expiry
}

// CompleteRequest is the body of POST /v1/tasks/complete.
type CompleteRequest struct {
	TaskRef
	Result json.RawMessage `json:"result"` // any JSON, null included
}

// FailRequest is the body of POST /v1/tasks/fail.
type FailRequest struct {
	TaskRef
	Error        string `json:"error"`                   // non-empty
	NonRetryable bool   `json:"non_retryable,omitempty"` // end the call's retries at once
}

// TaskEnded answers a completion or a failure. Retry is true when the
// failure queued another attempt.
type TaskEnded struct {
	Status string `json:"status"`          // "completed", "retry" or "failed"
	Retry  bool   `json:"retry,omitempty"` // another attempt was queued
}

// ActivityTask is a remote activity call of a run, as GET
// /v1/runs/{id}/tasks lists it.
type ActivityTask struct {
	Key       string          `json:"key"`                    // the call's key in the run
	Name      string          `json:"name"`                   // the activity's name
	Attempt   int             `json:"attempt"`                // the current or last attempt, from 1
	State     string          `json:"state"`                  // queued, claimed, done or canceled
	Worker    string          `json:"worker,omitempty"`       // holding it (claimed), or the last to hold it
	ClaimedAt *time.Time      `json:"claimed_at,omitempty"`   // when the worker claimed it
	Heartbeat *time.Time      `json:"heartbeat_at,omitempty"` // its last heartbeat
	Expiry    *time.Time      `json:"lease_expiry,omitempty"` // while claimed
	VisibleAt *time.Time      `json:"retry_at,omitempty"`     // a queued retry waits until then
	LastError string          `json:"last_error,omitempty"`   // the previous attempt's error
	Progress  json.RawMessage `json:"progress,omitempty"`     // the last heartbeat's progress
	CreatedAt time.Time       `json:"created_at"`             // when the run made the call
}

// TaskList answers GET /v1/runs/{id}/tasks, in the order the run issued
// the calls.
type TaskList struct {
	Run   string         `json:"run"`   // the run's id
	Tasks []ActivityTask `json:"tasks"` // the run's remote calls
}

// RunTasks returns a run's remote activity calls, in the order it issued
// them (GET /v1/runs/{id}/tasks).
func (c *Client) RunTasks(ctx context.Context, id string) ([]ActivityTask, error) {
	var l TaskList
	err := c.get(ctx, "/v1/runs/"+esc(id)+"/tasks", &l)
	return l.Tasks, err
}

// ClaimTasks claims up to req.Max queued attempts of the activities
// req.Names (POST /v1/tasks/claim), waiting up to req.WaitMS for one when
// none is queued: a long poll, which ends with ctx (returning ctx's
// error). No task means the wait ended first.
func (c *Client) ClaimTasks(ctx context.Context, req ClaimRequest) ([]ClaimedTask, error) {
	var resp ClaimResponse
	_, err := c.post(ctx, "/v1/tasks/claim", req, &resp)
	return resp.Tasks, err
}

// HeartbeatTask extends an attempt's lease and records its progress
// (POST /v1/tasks/heartbeat); it returns the lease's new expiry. An
// attempt that is no longer the worker's is an *Error with CodeConflict
// (stop it), an unknown task one with CodeNotFound.
func (c *Client) HeartbeatTask(ctx context.Context, req HeartbeatRequest) (time.Time, error) {
	var resp HeartbeatResponse
	_, err := c.post(ctx, "/v1/tasks/heartbeat", req, &resp)
	return resp.LeaseExpiry, err
}

// CompleteTask records an attempt's result as its call's outcome
// (POST /v1/tasks/complete). An attempt that is no longer current or not
// the worker's is an *Error with CodeConflict, and changes nothing.
func (c *Client) CompleteTask(ctx context.Context, req CompleteRequest) (TaskEnded, error) {
	var e TaskEnded
	_, err := c.post(ctx, "/v1/tasks/complete", req, &e)
	return e, err
}

// FailTask records that an attempt failed (POST /v1/tasks/fail): the
// call's retry policy queues the next attempt (Retry) or the call fails.
// Errors as for CompleteTask.
func (c *Client) FailTask(ctx context.Context, req FailRequest) (TaskEnded, error) {
	var e TaskEnded
	_, err := c.post(ctx, "/v1/tasks/fail", req, &e)
	return e, err
}
