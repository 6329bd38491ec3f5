package server

import (
	"cmp"
	"encoding/json"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// The JSON documents of the API (docs/api.md describes each). Clients in
// Go (the skein CLI) decode into these types.

// Module is a deployed module, without its bytes.
type Module struct {
	Hash string `json:"hash"`
	// Name is the name the request used, else the name last deployed;
	// empty for a module without one.
	Name string `json:"name"`
	// Names are every name that points at the module, sorted.
	Names      []string  `json:"names"`
	ABIVersion int       `json:"abi_version"`
	Workflows  []string  `json:"workflows"`
	CreatedAt  time.Time `json:"created_at"`
}

// ModuleList answers GET /v1/modules.
type ModuleList struct {
	Modules []Module `json:"modules"`
}

// Run is a run record.
type Run struct {
	ID       string          `json:"id"`
	Module   string          `json:"module"` // module hash
	Workflow string          `json:"workflow"`
	Status   string          `json:"status"`
	Input    json.RawMessage `json:"input"`
	Result   json.RawMessage `json:"result"` // null until completed
	Error    string          `json:"error,omitempty"`
	Parent   string          `json:"parent,omitempty"` // the parent run of a child workflow
	// ParentClose is a child run's policy for its parent's end: "cancel"
	// (the default) or "abandon"; omitted for a run without a parent.
	// Abandoned is true once its parent ended before it and left it
	// running (policy abandon): it goes on on its own.
	ParentClose string `json:"parent_close,omitempty"`
	Abandoned   bool   `json:"abandoned,omitempty"`
	// ContinuedFrom is the run this one continued (skein.ContinueAsNew;
	// ids "{root}~N", docs/api.md), ContinuedAs the run this one continued
	// as (status continued; its result is that run's input).
	ContinuedFrom string `json:"continued_from,omitempty"`
	ContinuedAs   string `json:"continued_as,omitempty"`
	// CancelReason is set once a cancellation was requested.
	CancelReason string    `json:"cancel_reason,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	// Worker is the worker (skein serve --worker-id) holding the run's
	// lease, and LeaseExpiry when that lease ends unless renewed; both are
	// omitted when no worker holds the run. A worker that stopped without
	// releasing its lease (it crashed) stays here, with an expiry in the
	// past, until another worker claims the run.
	Worker      string     `json:"worker,omitempty"`
	LeaseExpiry *time.Time `json:"lease_expiry,omitempty"`
}

// RunList answers GET /v1/runs. NextCursor is empty on the last page.
type RunList struct {
	Runs       []Run  `json:"runs"`
	NextCursor string `json:"next_cursor"`
}

// LeaseList answers GET /v1/runs/{id}/leases: every claim of the run by
// a worker, in token order.
type LeaseList struct {
	Run    string  `json:"run"`
	Leases []Lease `json:"leases"`
}

// Lease is one claim of a run by a worker.
type Lease struct {
	Worker    string    `json:"worker"`
	Token     int64     `json:"token"`
	ClaimedAt time.Time `json:"claimed_at"`
	// Expiry is the latest expiry of the lease: the claim's, or that of
	// its last renewal.
	Expiry time.Time `json:"expiry"`
	// ReleasedAt is when the worker gave the lease up; omitted when it did
	// not (the lease is held, or it expired).
	ReleasedAt *time.Time `json:"released_at,omitempty"`
	// EndedAt is when the lease stopped being held, as far as is known:
	// the earlier of ReleasedAt and Expiry (for a lease still held, its
	// expiry).
	EndedAt time.Time `json:"ended_at"`
}

// StartRequest is the body of POST /v1/runs.
type StartRequest struct {
	Module   string          `json:"module"`             // name or hash
	Workflow string          `json:"workflow,omitempty"` // default: the module's only workflow
	Input    json.RawMessage `json:"input,omitempty"`    // default null
	ID       string          `json:"id,omitempty"`       // default: generated
	Timeout  string          `json:"timeout,omitempty"`  // Go duration, e.g. "30s"
}

// CancelRequest is the (optional) body of POST /v1/runs/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ResolveRequest is the body of POST /v1/promises/{id}: exactly one of
// Value (any JSON, null included) and Error.
type ResolveRequest struct {
	Value json.RawMessage `json:"value,omitempty"`
	Error *string         `json:"error,omitempty"`
}

// Resolved answers POST /v1/promises/{id}.
type Resolved struct {
	Promise string `json:"promise"`
	Status  string `json:"status"` // "ok" or "error"
	// AlreadySettled: the promise held this same outcome before the
	// request; nothing changed (a retried settlement).
	AlreadySettled bool `json:"already_settled,omitempty"`
}

// ErrorBody is every error answer: {"error":{"code":..., "message":...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error of an ErrorBody.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes.
const (
	CodeBadRequest       = "bad_request"
	CodeInvalidModule    = "invalid_module"
	CodeUnauthorized     = "unauthorized"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeTooLarge         = "too_large"
	CodeModuleLimit      = "module_limit"   // 422: a module over a structure limit or the compile deadline
	CodeQuotaExceeded    = "quota_exceeded" // 507: the quota on stored modules
	CodeInternal         = "internal"
	CodeUnavailable      = "unavailable"
	// CodeForbidden: a browser request from a page of another origin.
	CodeForbidden = "forbidden"
	// CodeUnsupportedMediaType: a write whose Content-Type is not the
	// endpoint's (application/json; a module's application/wasm).
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeMisdirected: without a token, a Host that is not this server.
	CodeMisdirected = "misdirected_request"
	// CodeRequestTimeout: a request body that did not arrive in time.
	CodeRequestTimeout = "request_timeout"
	// CodeInsufficientStorage (HTTP 507): the database is full (its disk,
	// or its size limit); the message names it. Nothing was written.
	CodeInsufficientStorage = "insufficient_storage"
)

func moduleJSON(m store.Module) Module {
	wfs := m.Workflows
	if wfs == nil {
		wfs = []string{}
	}
	names := m.Names
	if names == nil {
		names = []string{}
	}
	return Module{Hash: m.Hash, Name: m.Name, Names: names, ABIVersion: m.ABIVersion, Workflows: wfs, CreatedAt: m.CreatedAt.UTC()}
}

func runJSON(r store.Run) Run {
	v := Run{ID: r.ID, Module: r.ModuleHash, Workflow: r.Workflow, Status: string(r.Status),
		Error: r.Error, Parent: r.Parent, CancelReason: r.Cancel,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if len(r.Input) > 0 {
		v.Input = json.RawMessage(r.Input)
	}
	if len(r.Result) > 0 {
		v.Result = json.RawMessage(r.Result)
	}
	v.ContinuedFrom = host.ContinuedFromID(r.ID)
	if r.Status == store.RunContinued {
		v.ContinuedAs = host.ContinuedRunID(r.ID)
	}
	if r.Parent != "" {
		v.ParentClose, v.Abandoned = string(cmp.Or(r.ParentClose, store.ParentCloseCancel)), r.Abandoned
	}
	if r.LeaseOwner != "" {
		v.Worker = r.LeaseOwner
		v.LeaseExpiry = unixTimeOf(r.LeaseExpiry)
	}
	return v
}

func leaseJSON(l store.LeaseRecord) Lease {
	return Lease{Worker: l.Owner, Token: l.Token, ClaimedAt: nsTime(l.ClaimedAt), Expiry: nsTime(l.Expiry),
		ReleasedAt: unixTimeOf(l.ReleasedAt), EndedAt: nsTime(l.End())}
}

// nsTime is a unix ns time in UTC.
func nsTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// unixTimeOf is nsTime(ns), or nil for 0.
func unixTimeOf(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := nsTime(ns)
	return &t
}

// ActivityTask is a remote activity call of a run (GET /v1/runs/{id}/tasks).
type ActivityTask struct {
	Key       string          `json:"key"`
	Name      string          `json:"name"`
	Attempt   int             `json:"attempt"`
	State     string          `json:"state"`            // queued, claimed, done or canceled
	Worker    string          `json:"worker,omitempty"` // holding it (claimed), or the last to hold it
	ClaimedAt *time.Time      `json:"claimed_at,omitempty"`
	Heartbeat *time.Time      `json:"heartbeat_at,omitempty"`
	Expiry    *time.Time      `json:"lease_expiry,omitempty"` // while claimed
	VisibleAt *time.Time      `json:"retry_at,omitempty"`     // a queued retry waits until then
	LastError string          `json:"last_error,omitempty"`
	Progress  json.RawMessage `json:"progress,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// TaskList answers GET /v1/runs/{id}/tasks, in the order the run issued
// the calls.
type TaskList struct {
	Run   string         `json:"run"`
	Tasks []ActivityTask `json:"tasks"`
}

func activityTaskJSON(t store.Task) ActivityTask {
	a := ActivityTask{Key: t.Key, Name: t.Name, Attempt: t.Attempt, State: string(t.State), Worker: t.Owner,
		ClaimedAt: unixTimeOf(t.ClaimedAt), Heartbeat: unixTimeOf(t.Heartbeat), LastError: t.LastError,
		Progress: t.Progress, CreatedAt: t.CreatedAt.UTC()}
	if t.State == store.TaskClaimed {
		a.Expiry = unixTimeOf(t.Expiry)
	}
	if t.State == store.TaskQueued && t.VisibleAt > time.Now().UnixNano() {
		a.VisibleAt = unixTimeOf(t.VisibleAt)
	}
	return a
}
