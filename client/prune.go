package client

import (
	"context"
	"net/http"
	"time"
)

// Retention (docs/operations.md, "Retention").

// PruneRequest is the body of POST /v1/runs/prune: the horizon, as a
// time (Before) or an age (OlderThan: a Go duration such as "720h", or
// days such as "30d"), exactly one of them; DryRun counts what would be
// deleted and deletes nothing.
type PruneRequest struct {
	Before    *time.Time `json:"before,omitempty"`
	OlderThan string     `json:"older_than,omitempty"`
	DryRun    bool       `json:"dry_run,omitempty"`
}

// PruneResult is the answer of POST /v1/runs/prune.
type PruneResult struct {
	Before  time.Time `json:"before"`  // the horizon: runs that ended before it
	DryRun  bool      `json:"dry_run"` // nothing was deleted
	Runs    int       `json:"runs"`    // runs deleted (dry run: that would be)
	Batches int       `json:"batches"` // transactions it took
	IDs     []string  `json:"ids"`     // the first 100 of them
}

// Prune deletes the runs that ended before the horizon req names, with
// all that belongs to them, except those a run that has not ended needs
// (POST /v1/runs/prune).
func (c *Client) Prune(ctx context.Context, req PruneRequest) (PruneResult, error) {
	var res PruneResult
	_, err := c.post(ctx, "/v1/runs/prune", req, &res)
	return res, err
}

// DeleteRun deletes one run that ended, with all that belongs to it
// (DELETE /v1/runs/{id}). A run that has not ended, or that a run that
// has not ended needs, is an *Error with CodeConflict naming the rule.
func (c *Client) DeleteRun(ctx context.Context, id string) error {
	_, err := c.call(ctx, http.MethodDelete, "/v1/runs/"+esc(id), nil, nil)
	return err
}
