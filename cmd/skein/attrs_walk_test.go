package main

import (
	"context"
	"strings"
	"testing"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// walkAttributes: docs/operations.md, "Search attributes": declare,
// start with attributes, read and filter them, delete one; with the
// errors of a bad declaration and an undeclared condition.
func walkAttributes(t *testing.T, w *walkServer) {
	ctx := context.Background()
	w.cli(t, 0, "deploy", wasmbuild.Build(t, "./examples/attrs"), "--name", "attrs")
	for _, a := range []string{"customer int", "region string", "stage string", "priority float", "closed bool", "closed_at time"} {
		name, typ, _ := strings.Cut(a, " ")
		w.cli(t, 0, "attribute", "create", name, "--type", typ)
	}
	w.cli(t, 0, "attribute", "list")
	want(t, "a declaration of a bad type", w.post(t, "/v1/attributes", `{"name":"x","type":"decimal"}`), 400, "bad_request")
	want(t, "a declaration of a taken name", w.post(t, "/v1/attributes", `{"name":"customer","type":"int"}`), 409, "conflict")
	want(t, "a start with a wrong type", w.post(t, "/v1/runs", `{"module":"attrs","attributes":{"customer":"x"}}`), 400, "bad_request")
	want(t, "a start with attributes", w.post(t, "/v1/runs", `{"module":"attrs","id":"walk-attrs","input":{"customer":42,"region":"eu"},"attributes":{"stage":"new"}}`), 201, "")
	if _, err := w.c.Wait(ctx, "walk-attrs", client.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	if r, err := w.c.Run(ctx, "walk-attrs"); err != nil || r.Status != "completed" || r.Attributes["customer"] != 42.0 || r.Attributes["stage"] != "done" {
		t.Errorf("walk-attrs: %+v %v", r, err)
	}
	l, err := w.c.Runs(ctx, client.RunFilter{Attrs: map[string]string{"customer": "42"}})
	if err != nil || len(l.Runs) != 1 || l.Runs[0].ID != "walk-attrs" {
		t.Errorf("runs of customer 42: %+v %v", l, err)
	}
	want(t, "a condition on an undeclared name", w.raw(t, "GET", "/v1/runs?attr.nope=1", nil, "Authorization", "Bearer "+walkToken), 400, "bad_request")
	w.cli(t, 0, "attribute", "delete", "closed")
}
