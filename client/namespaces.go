package client

import (
	"context"
	"net/http"
	"time"
)

// Namespaces hold a team's or a customer's modules, runs, schedules and
// hooks apart from everyone else's (docs/tenants.md, "Namespaces").
// Namespace default always exists.

// NamespaceRequest is the body of POST /v1/namespaces.
type NamespaceRequest struct {
	Name        string `json:"name"`                  // required: letters, digits and - _ : @, starting with a letter; at most 64 bytes
	Description string `json:"description,omitempty"` // at most 1024 bytes
	// Retention is how long the namespace keeps ended runs: "default"
	// (the server's, also when omitted), "forever" (or "0") or a
	// duration such as "720h".
	Retention string `json:"retention,omitempty"`
	Weight    *int   `json:"weight,omitempty"` // its share of execution slots, 1 to 1000; default 1
}

// NamespaceUpdate is the body of PATCH /v1/namespaces/{name}: the fields
// given change, the others stay (the rules of NamespaceRequest).
type NamespaceUpdate struct {
	Description *string `json:"description,omitempty"`
	Retention   *string `json:"retention,omitempty"`
	Weight      *int    `json:"weight,omitempty"`
}

// Namespace is a namespace as the API shows it.
type Namespace struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Retention is "default" (the server's), "forever" or a Go duration
	// ("720h0m0s").
	Retention string    `json:"retention"`
	Weight    int       `json:"weight"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// NamespaceList answers GET /v1/namespaces.
type NamespaceList struct {
	Namespaces []Namespace `json:"namespaces"` // by name, default included
}

// CreateNamespace creates a namespace (POST /v1/namespaces). A bad field
// is an *Error with CodeBadRequest naming the rule, a taken name one with
// CodeConflict.
func (c *Client) CreateNamespace(ctx context.Context, req NamespaceRequest) (Namespace, error) {
	var n Namespace
	_, err := c.post(ctx, "/v1/namespaces", req, &n)
	return n, err
}

// Namespaces lists the namespaces by name (GET /v1/namespaces).
func (c *Client) Namespaces(ctx context.Context) ([]Namespace, error) {
	var l NamespaceList
	err := c.get(ctx, "/v1/namespaces", &l)
	return l.Namespaces, err
}

// Namespace returns a namespace (GET /v1/namespaces/{name}).
func (c *Client) Namespace(ctx context.Context, name string) (Namespace, error) {
	var n Namespace
	err := c.get(ctx, "/v1/namespaces/"+esc(name), &n)
	return n, err
}

// UpdateNamespace changes the fields of a namespace that u gives and
// returns it (PATCH /v1/namespaces/{name}).
func (c *Client) UpdateNamespace(ctx context.Context, name string, u NamespaceUpdate) (Namespace, error) {
	var n Namespace
	_, err := c.call(ctx, http.MethodPatch, "/v1/namespaces/"+esc(name), u, &n)
	return n, err
}

// DeleteNamespace deletes a namespace that holds nothing
// (DELETE /v1/namespaces/{name}). One that holds runs, modules,
// schedules, hooks, attribute declarations or keys is an *Error with
// CodeConflict saying what is left; default is never deleted.
func (c *Client) DeleteNamespace(ctx context.Context, name string) error {
	_, err := c.call(ctx, http.MethodDelete, "/v1/namespaces/"+esc(name), nil, nil)
	return err
}
