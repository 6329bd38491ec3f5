package main

import (
	"testing"

	"github.com/skeinrun/skein/client"
)

// walkKeys is the API keys' part of TestOpenAPIWalkthrough: create,
// list, rotate and revoke a key, and the 403 of a role and the 401 of a
// revoked key.
func walkKeys(t *testing.T, w *walkServer) {
	ctx := t.Context()
	ks, err := w.c.CreateKey(ctx, client.KeyRequest{Namespace: "default", Role: "read", Name: "walk", ExpiresIn: "30d"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.Keys(ctx); err != nil {
		t.Fatal(err)
	}
	r := w.raw(t, "POST", "/v1/runs", []byte(`{"module":"m"}`), "Content-Type", "application/json", "Authorization", "Bearer "+ks.Secret)
	want(t, "a read key starts a run", r, 403, "forbidden")
	rot, err := w.c.RotateKey(ctx, ks.Key.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.RevokeKey(ctx, ks.Key.ID); err != nil {
		t.Fatal(err)
	}
	r = w.raw(t, "GET", "/v1/runs", nil, "Authorization", "Bearer "+rot.Secret)
	want(t, "a revoked key", r, 401, "unauthorized")
}
