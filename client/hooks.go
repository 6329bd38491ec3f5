package client

import (
	"bytes"
	"context"
	"net/http"
	"time"
)

// Webhooks start a run of a workflow for each delivery to their URL
// (docs/schedules.md).

// HookRequest is the body of POST /v1/hooks.
type HookRequest struct {
	Name     string `json:"name"`               // required
	Module   string `json:"module"`             // required: a module name or hash
	Workflow string `json:"workflow,omitempty"` // default: the module's only workflow
	// SecretEnv names the server's environment variable (SKEIN_HOOK_*)
	// that holds the secret; Secret names it in the server's hook secrets
	// file instead. Neither: deliveries are unsigned.
	SecretEnv string `json:"secret_env,omitempty"`
	Secret    string `json:"secret,omitempty"`
	Scheme    string `json:"scheme,omitempty"`    // github (default) or timestamped; needs a secret
	Tolerance string `json:"tolerance,omitempty"` // timestamped: a duration from 1s to 1h; default 5m
	// KeepHeaders are credential-looking headers the run's input keeps.
	KeepHeaders []string `json:"keep_headers,omitempty"`
}

// Hook is a webhook as the API shows it.
type Hook struct {
	Name        string    `json:"name"`                   // the hook's name
	Module      string    `json:"module"`                 // the module name or hash it was created with
	Workflow    string    `json:"workflow"`               // the workflow each delivery starts
	SecretEnv   string    `json:"secret_env,omitempty"`   // the server's variable holding the secret
	Secret      string    `json:"secret,omitempty"`       // the secret's name in the server's hook secrets file
	Scheme      string    `json:"scheme,omitempty"`       // github or timestamped; omitted: unsigned
	Tolerance   string    `json:"tolerance,omitempty"`    // timestamped only
	KeepHeaders []string  `json:"keep_headers,omitempty"` // headers the run's input keeps
	URL         string    `json:"url"`                    // the delivery endpoint's path, /v1/hooks/{name}
	CreatedAt   time.Time `json:"created_at"`             // when the hook was created
}

// HookList answers GET /v1/hooks.
type HookList struct {
	Hooks []Hook `json:"hooks"` // by name
}

// CreateHook creates a webhook (POST /v1/hooks). A bad field is an *Error
// with CodeBadRequest naming the rule, a taken name one with CodeConflict.
func (c *Client) CreateHook(ctx context.Context, req HookRequest) (Hook, error) {
	var h Hook
	_, err := c.post(ctx, "/v1/hooks", req, &h)
	return h, err
}

// Hooks lists the webhooks by name (GET /v1/hooks).
func (c *Client) Hooks(ctx context.Context) ([]Hook, error) {
	var l HookList
	err := c.get(ctx, "/v1/hooks", &l)
	return l.Hooks, err
}

// Hook returns a webhook (GET /v1/hooks/{name}).
func (c *Client) Hook(ctx context.Context, name string) (Hook, error) {
	var h Hook
	err := c.get(ctx, "/v1/hooks/"+esc(name), &h)
	return h, err
}

// DeleteHook deletes a webhook (DELETE /v1/hooks/{name}); the runs it
// started stay.
func (c *Client) DeleteHook(ctx context.Context, name string) error {
	_, err := c.call(ctx, http.MethodDelete, "/v1/hooks/"+esc(name), nil, nil)
	return err
}

// Deliver sends a delivery to a webhook as its sender would
// (POST /v1/hooks/{name}): body of any type, with header (a signature,
// X-Hub-Signature-256 or Skein-Signature; an Idempotency-Key; a
// Content-Type, default application/octet-stream). It returns the run
// started, created false when the Idempotency-Key names a delivery seen
// before with the same body. A signature that does not verify is an
// *Error with CodeUnauthorized.
func (c *Client) Deliver(ctx context.Context, name string, body []byte, header http.Header) (r Run, created bool, err error) {
	ct := header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	status, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/hooks/" + esc(name),
		body: bytes.NewReader(body), contentType: ct, header: header}, &r)
	return r, status == http.StatusCreated, err
}
