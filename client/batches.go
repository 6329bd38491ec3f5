package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// BatchRequest is the body of POST /v1/batches: an action applied to
// every run the filter selects (docs/operations.md, "Bulk actions").
type BatchRequest struct {
	Where  string          `json:"where"`          // the filter; not empty
	Action string          `json:"action"`         // cancel, ...
	Args   json.RawMessage `json:"args,omitempty"` // the action's arguments, e.g. {"reason": "..."}
	// DryRun lists the runs the batch would act on (up to Limit) and
	// acts on none: no batch is created.
	DryRun bool    `json:"dry_run,omitempty"`
	Limit  int     `json:"limit,omitempty"` // a dry run's most runs listed; default and most 1000
	Rate   float64 `json:"rate,omitempty"`  // runs per second; default 50, at most 1000
}

// Batch is a batch job (POST /v1/batches, GET /v1/batches/{id}).
type Batch struct {
	ID     string          `json:"id"`
	Where  string          `json:"where"`  // as given
	Filter string          `json:"filter"` // canonical: absolute times, module hashes
	Action string          `json:"action"`
	Args   json.RawMessage `json:"args,omitempty"`
	Rate   float64         `json:"rate"`
	// Status is running, done, canceled or failed (the job could not go
	// on: Errors says why).
	Status string `json:"status"`
	Cancel string `json:"cancel,omitempty"` // the cancellation's reason, once requested
	// Selected counts the runs the filter selected when the batch started
	// (0 until it is counted); Done and Failed the runs acted on.
	Selected int64        `json:"selected"`
	Done     int64        `json:"done"`
	Failed   int64        `json:"failed"`
	Errors   []BatchError `json:"errors,omitempty"` // the first 100
	Cursor   string       `json:"cursor,omitempty"` // the last run acted on (runs are walked by id)
	// Before: the batch acts on runs created before it only.
	Before    time.Time  `json:"before"`
	CreatedAt time.Time  `json:"created_at"`
	StartedAt *time.Time `json:"started_at,omitempty"` // the first action
	ActedAt   *time.Time `json:"acted_at,omitempty"`   // the latest action
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Worker    string     `json:"worker,omitempty"` // the worker that holds it
}

// BatchError is the error of a batch's action on one run (Run empty: of
// the batch itself).
type BatchError struct {
	Run   string `json:"run,omitempty"`
	Error string `json:"error"`
}

// BatchList answers GET /v1/batches, newest first.
type BatchList struct {
	Batches []Batch `json:"batches"`
}

// DryRun answers POST /v1/batches with dry_run: the runs the batch
// would act on, and whether more would follow.
type DryRun struct {
	DryRun bool   `json:"dry_run"` // true
	Runs   []Run  `json:"runs"`
	More   bool   `json:"more"`
	Action string `json:"action"`
}

// StartBatch starts a batch (POST /v1/batches, dry_run false).
func (c *Client) StartBatch(ctx context.Context, req BatchRequest) (Batch, error) {
	req.DryRun = false
	var b Batch
	_, err := c.post(ctx, "/v1/batches", req, &b)
	return b, err
}

// DryRunBatch lists what a batch would act on (POST /v1/batches with
// dry_run).
func (c *Client) DryRunBatch(ctx context.Context, req BatchRequest) (DryRun, error) {
	req.DryRun = true
	var d DryRun
	_, err := c.post(ctx, "/v1/batches", req, &d)
	return d, err
}

// Batch returns a batch (GET /v1/batches/{id}).
func (c *Client) Batch(ctx context.Context, id string) (Batch, error) {
	var b Batch
	err := c.get(ctx, "/v1/batches/"+esc(id), &b)
	return b, err
}

// Batches lists the latest batches (GET /v1/batches), newest first.
func (c *Client) Batches(ctx context.Context, limit int) ([]Batch, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var l BatchList
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/batches", query: q}, &l)
	return l.Batches, err
}

// CancelBatch cancels a batch (POST /v1/batches/{id}/cancel): it stops
// before its next run.
func (c *Client) CancelBatch(ctx context.Context, id, reason string) (Batch, error) {
	var b Batch
	_, err := c.post(ctx, "/v1/batches/"+esc(id)+"/cancel", CancelRequest{Reason: reason}, &b)
	return b, err
}
