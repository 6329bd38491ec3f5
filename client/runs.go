package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The statuses of a run (docs/api.md, "Run").
const (
	StatusPending   = "pending"   // created, not executed yet
	StatusRunning   = "running"   // a worker is executing it
	StatusSuspended = "suspended" // every task waits: on a timer, a promise, a child run
	StatusCompleted = "completed" // ended with a result
	StatusFailed    = "failed"    // ended with an error
	StatusDiverged  = "diverged"  // replay found changed code or nondeterminism; it can be resumed
	StatusCanceled  = "canceled"  // ended by a cancellation
	StatusContinued = "continued" // ended by continuing as new (Run.ContinuedAs)
	StatusReset     = "reset"     // reset: a new run (Run.ResetTo) carries on from a prefix of its journal
)

// Ended reports whether a run of this status will not change without
// help: it ended (completed, failed, canceled, continued or reset) or
// diverged (it waits for a resume against fixed code).
func Ended(status string) bool {
	switch status {
	case StatusCompleted, StatusFailed, StatusDiverged, StatusCanceled, StatusContinued, StatusReset:
		return true
	}
	return false
}

// Run is a run record (docs/api.md, "Run").
type Run struct {
	ID       string          `json:"id"`               // the run's id
	Module   string          `json:"module"`           // the module's hash
	Workflow string          `json:"workflow"`         // the workflow it runs
	Status   string          `json:"status"`           // one of the Status values
	Input    json.RawMessage `json:"input"`            // the workflow's input
	Result   json.RawMessage `json:"result"`           // null until completed; a continued run's is its successor's input
	Error    string          `json:"error,omitempty"`  // why it failed, diverged or was canceled
	Parent   string          `json:"parent,omitempty"` // the parent run of a child workflow
	// ParentClose is a child run's policy for its parent's end: "cancel"
	// (the default) or "abandon"; omitted for a run without a parent.
	// Abandoned is true once its parent ended before it and left it
	// running (policy abandon): it goes on on its own.
	ParentClose string `json:"parent_close,omitempty"`
	Abandoned   bool   `json:"abandoned,omitempty"`
	// ContinuedFrom is the run this one continued (continue-as-new; ids
	// "{root}~N"), ContinuedAs the run this one continued as (status
	// continued).
	ContinuedFrom string `json:"continued_from,omitempty"`
	ContinuedAs   string `json:"continued_as,omitempty"`
	// ResetTo is the run a reset of this one made (status reset);
	// ResetFrom and ResetKey, on that run, the run it was reset from and
	// the key it was reset to (docs/api.md "Resetting a run").
	ResetTo   string `json:"reset_to,omitempty"`
	ResetFrom string `json:"reset_from,omitempty"`
	ResetKey  string `json:"reset_key,omitempty"`
	// CancelReason is set once a cancellation was requested.
	CancelReason string `json:"cancel_reason,omitempty"`
	// Paused is set while the run is paused (POST /v1/runs/{id}/pause).
	Paused *Pause `json:"paused,omitempty"`
	// CreatedAt and UpdatedAt are when the run was created and last
	// changed.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Worker is the worker (skein serve --worker-id) holding the run's
	// lease, and LeaseExpiry when that lease ends unless renewed; both are
	// omitted when no worker holds the run. A worker that stopped without
	// releasing its lease (it crashed) stays here, with an expiry in the
	// past, until another worker claims the run.
	Worker      string     `json:"worker,omitempty"`
	LeaseExpiry *time.Time `json:"lease_expiry,omitempty"`
	// Attributes are the run's search attributes by name (a time as an
	// RFC 3339 string); omitted when it has none.
	Attributes map[string]any `json:"attributes,omitempty"`
}

// RunList answers GET /v1/runs. NextCursor is empty on the last page.
type RunList struct {
	Runs       []Run  `json:"runs"`        // ordered by id, or as RunFilter.Sort says
	NextCursor string `json:"next_cursor"` // pass it as RunFilter.Cursor for the next page
}

// RunFilter selects a page of runs (GET /v1/runs).
type RunFilter struct {
	Status   string // only runs of this status (a Status value); "" for all
	Workflow string // only runs of this workflow; "" for all
	Module   string // only runs of this module: a hash, or a name (the module it names now); "" for all
	// CreatedFrom and CreatedBefore bound the runs' creation time: at or
	// after CreatedFrom, before CreatedBefore; zero for no bound.
	CreatedFrom, CreatedBefore time.Time
	// Sort orders the runs: "id" (the default), "created", "ended",
	// "duration" or "status", with a leading "-" for descending order.
	Sort   string
	Limit  int    // at most this many, 1 to 1000; 0 for the server's default, 100
	Cursor string // the NextCursor of the previous page (with the same Sort); "" for the first
	// Where is a filter of the language (docs/operations.md, "Bulk
	// actions"), with the fields above; "" for none.
	Where string
	// Attrs are search attribute values the runs must carry, by name (the
	// query's attr.NAME=VALUE, VALUE as text of the declared type).
	Attrs map[string]string
}

// StartRequest is the body of POST /v1/runs.
type StartRequest struct {
	Module   string          `json:"module"`             // a module name or hash
	Workflow string          `json:"workflow,omitempty"` // default: the module's only workflow
	Input    json.RawMessage `json:"input,omitempty"`    // default null
	ID       string          `json:"id,omitempty"`       // default: generated
	Timeout  string          `json:"timeout,omitempty"`  // a Go duration, e.g. "30s": cancel the run if it has not ended by then
	// Attributes are the run's initial search attributes by name, each
	// of its declared type: a string, a number (an integer for int), a
	// bool, an RFC 3339 string for a time.
	Attributes map[string]any `json:"attributes,omitempty"`
}

// CancelRequest is the (optional) body of POST /v1/runs/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"` // default "canceled"
}

// Pause is who paused a run, why, and since when (Run.Paused).
type Pause struct {
	By     string    `json:"by"`     // who: "api", a token's label, "retry policy"
	Reason string    `json:"reason"` // why; may be empty
	Since  time.Time `json:"since"`  // when the run was paused
}

// PauseRequest is the (optional) body of POST /v1/runs/{id}/pause.
type PauseRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ResumeRequest is the body of POST /v1/runs/{id}/resume.
type ResumeRequest struct {
	Module string `json:"module,omitempty"` // a deployed module's name or hash; default: the run's own
}

// LeaseList answers GET /v1/runs/{id}/leases: every claim of the run by
// a worker, in token order.
type LeaseList struct {
	Run    string  `json:"run"`    // the run's id
	Leases []Lease `json:"leases"` // oldest first
}

// Lease is one claim of a run by a worker.
type Lease struct {
	Worker    string    `json:"worker"`     // the worker (skein serve --worker-id)
	Token     int64     `json:"token"`      // the claim's number: each claim of a run gets a greater one
	ClaimedAt time.Time `json:"claimed_at"` // when the worker claimed the run
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

// Start starts a run (POST /v1/runs). created is false when req.ID names
// a run started before with the same request: that run is returned and
// nothing is started, so a start can be retried. The same id with another
// module, workflow or input is an *Error with CodeConflict.
func (c *Client) Start(ctx context.Context, req StartRequest) (r Run, created bool, err error) {
	status, err := c.post(ctx, "/v1/runs", req, &r)
	return r, status == http.StatusCreated, err
}

// Run returns a run (GET /v1/runs/{id}).
func (c *Client) Run(ctx context.Context, id string) (Run, error) {
	var r Run
	err := c.get(ctx, "/v1/runs/"+esc(id), &r)
	return r, err
}

// Runs returns a page of runs, ordered by id or f.Sort (GET /v1/runs); when its
// NextCursor is not empty, pass it as f.Cursor for the next page.
func (c *Client) Runs(ctx context.Context, f RunFilter) (RunList, error) {
	q := url.Values{}
	for name, v := range map[string]string{"status": f.Status, "workflow": f.Workflow, "module": f.Module, "sort": f.Sort, "where": f.Where} {
		if v != "" {
			q.Set(name, v)
		}
	}
	if !f.CreatedFrom.IsZero() {
		q.Set("created_from", f.CreatedFrom.UTC().Format(time.RFC3339Nano))
	}
	if !f.CreatedBefore.IsZero() {
		q.Set("created_before", f.CreatedBefore.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	for name, v := range f.Attrs {
		q.Set("attr."+name, v)
	}
	var l RunList
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/runs", query: q}, &l)
	return l, err
}

// Cancel requests a run's cancellation (POST /v1/runs/{id}/cancel);
// reason "" is "canceled". It returns the run as stored (CancelReason
// set; its status changes when a worker delivers the cancellation). A
// run that has ended is an *Error with CodeConflict.
func (c *Client) Cancel(ctx context.Context, id, reason string) (Run, error) {
	var r Run
	_, err := c.post(ctx, "/v1/runs/"+esc(id)+"/cancel", CancelRequest{Reason: reason}, &r)
	return r, err
}

// Pause pauses a run (POST /v1/runs/{id}/pause): it is not executed
// until Unpause or ResumeOn; what reaches it meanwhile is kept. It
// returns the run as stored (Paused set). A run that has ended is an
// *Error with CodeConflict.
func (c *Client) Pause(ctx context.Context, id, reason string) (Run, error) {
	var r Run
	_, err := c.post(ctx, "/v1/runs/"+esc(id)+"/pause", PauseRequest{Reason: reason}, &r)
	return r, err
}

// Unpause lets a paused run execute again (POST /v1/runs/{id}/unpause)
// and returns it as stored.
func (c *Client) Unpause(ctx context.Context, id string) (Run, error) {
	var r Run
	_, err := c.post(ctx, "/v1/runs/"+esc(id)+"/unpause", struct{}{}, &r)
	return r, err
}

// ResumeOn points a suspended, paused, diverged or failed run at a
// deployed module (a name or hash; "": its own), unpauses it, and lets
// the server's workers replay it on that code (POST
// /v1/runs/{id}/resume). It returns the run as stored.
func (c *Client) ResumeOn(ctx context.Context, id, module string) (Run, error) {
	var r Run
	_, err := c.post(ctx, "/v1/runs/"+esc(id)+"/resume", ResumeRequest{Module: module}, &r)
	return r, err
}

// Leases returns a run's lease history (GET /v1/runs/{id}/leases): every
// claim of the run by a worker, oldest first.
func (c *Client) Leases(ctx context.Context, id string) ([]Lease, error) {
	var l LeaseList
	err := c.get(ctx, "/v1/runs/"+esc(id)+"/leases", &l)
	return l.Leases, err
}
