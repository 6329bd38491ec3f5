package client

import (
	"context"
	"net/url"
	"time"
)

// KeyRequest is the body of POST /v1/keys: a new API key.
type KeyRequest struct {
	// Namespace the key acts in; empty for a root key (which only a root
	// key may create). An admin key creates keys of its own namespace.
	Namespace string `json:"namespace,omitempty"`
	Role      string `json:"role"` // read, run, deploy, worker, admin or root
	Name      string `json:"name,omitempty"`
	// ExpiresIn (a Go duration, "720h") or ExpiresAt sets an expiry; none:
	// the key never expires.
	ExpiresIn string     `json:"expires_in,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Activities, for a worker key: the activity names it may claim
	// tasks of; empty: every name.
	Activities []string `json:"activities,omitempty"`
}

// Key is an API key as the API shows it: never its secret nor digest.
type Key struct {
	ID         string     `json:"id"`
	Namespace  string     `json:"namespace"` // empty for root
	Role       string     `json:"role"`
	Name       string     `json:"name,omitempty"`
	Activities []string   `json:"activities,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"` // written at most once a minute
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// KeySecret answers POST /v1/keys and POST /v1/keys/{id}/rotate: the key
// and its secret, shown this once.
type KeySecret struct {
	Secret string `json:"secret"`
	Key    Key    `json:"key"`
}

// KeyList answers GET /v1/keys, oldest first.
type KeyList struct {
	Keys []Key `json:"keys"`
}

// CreateKey creates an API key: POST /v1/keys. The secret is in the
// answer only.
func (c *Client) CreateKey(ctx context.Context, r KeyRequest) (KeySecret, error) {
	var out KeySecret
	_, err := c.post(ctx, "/v1/keys", r, &out)
	return out, err
}

// Keys lists the keys the caller may manage: GET /v1/keys (a root key
// sees every namespace's).
func (c *Client) Keys(ctx context.Context) ([]Key, error) {
	var out KeyList
	err := c.get(ctx, "/v1/keys", &out)
	return out.Keys, err
}

// RevokeKey revokes key id: POST /v1/keys/{id}/revoke. Its secret is
// refused from the next request on.
func (c *Client) RevokeKey(ctx context.Context, id string) (Key, error) {
	var out Key
	_, err := c.post(ctx, "/v1/keys/"+url.PathEscape(id)+"/revoke", struct{}{}, &out)
	return out, err
}

// RotateKey gives key id a new secret, in the answer only: POST
// /v1/keys/{id}/rotate. The old secret is refused from the next request
// on.
func (c *Client) RotateKey(ctx context.Context, id string) (KeySecret, error) {
	var out KeySecret
	_, err := c.post(ctx, "/v1/keys/"+url.PathEscape(id)+"/rotate", struct{}{}, &out)
	return out, err
}
