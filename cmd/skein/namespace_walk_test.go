package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// walkNamespaces: docs/tenants.md: create, list, describe,
// update and delete a namespace with the CLI, package client and curl,
// with the errors of a bad name, a bad weight, an unknown namespace and
// namespace default.
func walkNamespaces(t *testing.T, w *walkServer) {
	ctx := context.Background()
	w.cli(t, 0, "namespace", "create", "walk-ns", "--description", "a team", "--weight", "2")
	w.cli(t, 0, "namespace", "list")
	w.cli(t, 0, "namespace", "describe", "walk-ns")
	w.cli(t, 0, "namespace", "update", "walk-ns", "--retention", "720h")
	want(t, "a namespace of a bad name", w.post(t, "/v1/namespaces", `{"name":"9lives"}`), 400, "bad_request")
	want(t, "a namespace of a taken name", w.post(t, "/v1/namespaces", `{"name":"walk-ns"}`), 409, "conflict")
	want(t, "a namespace by curl", w.post(t, "/v1/namespaces", `{"name":"walk-curl","retention":"forever"}`), 201, "")
	auth := []string{"Content-Type", "application/json", "Authorization", "Bearer " + walkToken}
	want(t, "a weight out of range", w.raw(t, "PATCH", "/v1/namespaces/walk-curl", []byte(`{"weight":0}`), auth...), 400, "bad_request")
	want(t, "an update by curl", w.raw(t, "PATCH", "/v1/namespaces/walk-curl", []byte(`{"description":"by curl"}`), auth...), 200, "")
	want(t, "an unknown namespace", w.raw(t, "GET", "/v1/namespaces/nosuch", nil, auth[2:]...), 404, "not_found")
	want(t, "delete default", w.raw(t, "DELETE", "/v1/namespaces/default", nil, auth[2:]...), 409, "conflict")
	if n, err := w.c.UpdateNamespace(ctx, "walk-ns", client.NamespaceUpdate{Weight: new(int)}); err == nil {
		t.Errorf("UpdateNamespace(weight 0) = %+v; want an error", n)
	}
	if ns, err := w.c.Namespaces(ctx); err != nil || len(ns) < 3 {
		t.Errorf("Namespaces = %+v, %v; want default, walk-curl, walk-ns", ns, err)
	}
	w.cli(t, 0, "namespace", "delete", "walk-ns")
	want(t, "delete by curl", w.raw(t, "DELETE", "/v1/namespaces/walk-curl", nil, auth[2:]...), 204, "")
	walkNamespaceHook(t, w, auth)
}

// walkNamespaceHook: docs/tenants.md, "Which namespace a request acts
// in": a hook of a namespace other than default takes its deliveries at
// /v1/namespaces/{ns}/hooks/{name}, and only there.
func walkNamespaceHook(t *testing.T, w *walkServer, auth []string) {
	t.Helper()
	want(t, "a namespace for a hook", w.post(t, "/v1/namespaces", `{"name":"walk-hooks"}`), 201, "")
	ns := append([]string{"X-Skein-Namespace", "walk-hooks"}, auth...)
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./examples/digest"))
	if err != nil {
		t.Fatal(err)
	}
	up := append([]string{"X-Skein-Namespace", "walk-hooks", "Content-Type", "application/wasm"}, auth[2:]...)
	want(t, "a module of the namespace", w.raw(t, "POST", "/v1/modules?name=digest", wasm, up...), 201, "")
	r := w.raw(t, "POST", "/v1/hooks", []byte(`{"name":"ns-hook","module":"digest"}`), ns...)
	want(t, "a hook of the namespace", r, 201, "")
	if !strings.Contains(string(r.body), `"url":"/v1/namespaces/walk-hooks/hooks/ns-hook"`) {
		t.Errorf("the hook's url: %s; want /v1/namespaces/walk-hooks/hooks/ns-hook", r)
	}
	want(t, "its delivery", w.raw(t, "POST", "/v1/namespaces/walk-hooks/hooks/ns-hook", []byte(`{"n":1}`)), 201, "")
	want(t, "its delivery at default's URL", w.raw(t, "POST", "/v1/hooks/ns-hook", []byte(`{"n":1}`)), 404, "not_found")
	want(t, "a delivery to an unknown namespace", w.raw(t, "POST", "/v1/namespaces/nosuch/hooks/ns-hook", []byte(`{}`)), 404, "not_found")
}
