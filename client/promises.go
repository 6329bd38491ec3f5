package client

import (
	"context"
	"encoding/json"
	"fmt"
)

// ResolveRequest is the body of POST /v1/promises/{id}: exactly one of
// Value (any JSON, null included) and Error.
type ResolveRequest struct {
	Value json.RawMessage `json:"value,omitempty"` // the promise's value
	Error *string         `json:"error,omitempty"` // a non-empty error text
}

// Resolved answers POST /v1/promises/{id}.
type Resolved struct {
	Promise string `json:"promise"` // the promise's full id, {run}.{key}
	Status  string `json:"status"`  // "ok" or "error"
	// AlreadySettled: the promise held this same outcome before the
	// request; nothing changed (a retried settlement).
	AlreadySettled bool `json:"already_settled,omitempty"`
}

// Resolve settles an external promise (POST /v1/promises/{id}; id is
// {run}.{key}) with req's value or error. The settlement is durable when
// Resolve returns; settling again with the same outcome answers
// AlreadySettled, another outcome is an *Error with CodeConflict, a value
// without the promise's shape one with CodeBadRequest (the promise stays
// pending).
func (c *Client) Resolve(ctx context.Context, id string, req ResolveRequest) (Resolved, error) {
	var r Resolved
	_, err := c.post(ctx, "/v1/promises/"+esc(id), req, &r)
	return r, err
}

// ResolveValue is Resolve with value encoded as JSON (a json.RawMessage is
// sent as it is).
func (c *Client) ResolveValue(ctx context.Context, id string, value any) (Resolved, error) {
	b, err := json.Marshal(value)
	if err != nil {
		return Resolved{}, fmt.Errorf("resolve %s: encoding the value: %w", id, err)
	}
	return c.Resolve(ctx, id, ResolveRequest{Value: b})
}

// ResolveError is Resolve with an error text: the workflow's Get of the
// promise returns it as an error.
func (c *Client) ResolveError(ctx context.Context, id, text string) (Resolved, error) {
	return c.Resolve(ctx, id, ResolveRequest{Error: &text})
}
