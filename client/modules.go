package client

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"time"
)

// Module is a deployed module, without its bytes (docs/api.md, "Module").
type Module struct {
	// Hash is the hex sha256 of the module's bytes.
	Hash string `json:"hash"`
	// Name is the name the request used, else the name last deployed;
	// empty for a module without one.
	Name string `json:"name"`
	// Names are every name that points at the module, sorted.
	Names []string `json:"names"`
	// ABIVersion is the skein ABI version the module was built for.
	ABIVersion int `json:"abi_version"`
	// Workflows are the workflows the module registers, sorted.
	Workflows []string `json:"workflows"`
	// CreatedAt is when the module was first deployed.
	CreatedAt time.Time `json:"created_at"`
}

// ModuleList answers GET /v1/modules.
type ModuleList struct {
	Modules []Module `json:"modules"` // newest first
}

// Deploy uploads a module's .wasm bytes (POST /v1/modules) and points
// name at it unless name is empty. created is false when the same bytes
// were deployed before (the call is idempotent). A module skein cannot run
// is an *Error with CodeInvalidModule (400), one over a limit CodeTooLarge
// (413), CodeModuleLimit (422) or CodeQuotaExceeded (507).
func (c *Client) Deploy(ctx context.Context, name string, wasm []byte) (m Module, created bool, err error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	status, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/modules", query: q,
		body: bytes.NewReader(wasm), contentType: "application/wasm"}, &m)
	return m, status == http.StatusCreated, err
}

// Modules lists the deployed modules, newest first (GET /v1/modules).
func (c *Client) Modules(ctx context.Context) ([]Module, error) {
	var l ModuleList
	err := c.get(ctx, "/v1/modules", &l)
	return l.Modules, err
}

// Module returns the module of a hash or a name (GET /v1/modules/{ref});
// an unknown one is an *Error with CodeNotFound.
func (c *Client) Module(ctx context.Context, ref string) (Module, error) {
	var m Module
	err := c.get(ctx, "/v1/modules/"+esc(ref), &m)
	return m, err
}
