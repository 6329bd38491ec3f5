package client

import (
	"context"
	"encoding/json"
)

// ResetRequest is the body of POST /v1/runs/{id}/reset (docs/api.md
// "Resetting a run").
type ResetRequest struct {
	To     string          `json:"to"`               // the key of the settled op to execute again
	Module string          `json:"module,omitempty"` // a deployed module's name or hash; default: the run's own
	Input  json.RawMessage `json:"input,omitempty"`  // the new run's input; default: the run's own
	ID     string          `json:"id,omitempty"`     // the new run's id; default: {run}~reset-N
}

// Reset resets run id (POST /v1/runs/{id}/reset) and returns the new run:
// it holds the records of the run that cannot depend on the op at
// req.To and executes from there; the run itself ends with the status
// reset, linked to it.
func (c *Client) Reset(ctx context.Context, id string, req ResetRequest) (Run, error) {
	var r Run
	_, err := c.post(ctx, "/v1/runs/"+esc(id)+"/reset", req, &r)
	return r, err
}
