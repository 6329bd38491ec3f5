// Package taskwire holds the JSON documents of the worker protocol
// (docs/api.md, "Activity workers"): the server (package server) answers
// with them and the Go worker (package worker) sends them. It imports
// nothing but the standard library, so a worker does not pull in the
// host.
package taskwire

import (
	"encoding/json"
	"time"
)

// Paths of the worker protocol.
const (
	ClaimPath     = "/v1/tasks/claim"
	HeartbeatPath = "/v1/tasks/heartbeat"
	CompletePath  = "/v1/tasks/complete"
	FailPath      = "/v1/tasks/fail"
)

// ClaimRequest is the body of POST /v1/tasks/claim.
type ClaimRequest struct {
	Worker string   `json:"worker"`  // the worker's identity
	Names  []string `json:"names"`   // the activities it serves
	Max    int      `json:"max"`     // how many tasks it takes at most
	WaitMS int64    `json:"wait_ms"` // how long to wait for one (long poll); 0: answer at once
}

// Task is a claimed attempt of an activity call.
type Task struct {
	RunID   string          `json:"run_id"`
	Key     string          `json:"key"`
	Attempt int             `json:"attempt"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	// IdempotencyKey is the same for every attempt of the call and
	// unique across runs: "{run_id}.{key}".
	IdempotencyKey string `json:"idempotency_key"`
	// LeaseExpiry is when the attempt is failed as timed out unless a
	// heartbeat extends it; HeartbeatMS is how often to send one.
	LeaseExpiry time.Time `json:"lease_expiry"`
	HeartbeatMS int64     `json:"heartbeat_ms"`
	// TimeoutMS bounds the attempt (the op's timeout); 0: none.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// LastError is the previous attempt's error.
	LastError string `json:"last_error,omitempty"`
}

// ClaimResponse answers a claim: no task when the wait ended first.
type ClaimResponse struct {
	Tasks []Task `json:"tasks"`
}

// Ref names the attempt a heartbeat, completion or failure is for.
type Ref struct {
	RunID   string `json:"run_id"`
	Key     string `json:"key"`
	Attempt int    `json:"attempt"`
	Worker  string `json:"worker"`
}

// HeartbeatRequest is the body of POST /v1/tasks/heartbeat.
type HeartbeatRequest struct {
	Ref
	Progress json.RawMessage `json:"progress,omitempty"`
}

// HeartbeatResponse answers a heartbeat.
type HeartbeatResponse struct {
	LeaseExpiry time.Time `json:"lease_expiry"`
}

// CompleteRequest is the body of POST /v1/tasks/complete.
type CompleteRequest struct {
	Ref
	Result json.RawMessage `json:"result"`
}

// FailRequest is the body of POST /v1/tasks/fail.
type FailRequest struct {
	Ref
	Error        string `json:"error"`
	NonRetryable bool   `json:"non_retryable,omitempty"`
}

// Ended answers a completion or a failure. Retry is true when the
// failure queued another attempt.
type Ended struct {
	Status string `json:"status"` // "completed", "retry" or "failed"
	Retry  bool   `json:"retry,omitempty"`
}

// ErrorBody is the body of every error answer of the API.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}
