package main

// Typed promises and inputs (issue 21, item 4) through a real `skein
// serve` and the real CLI.

import (
	"path/filepath"
	"strings"
	"testing"
)

// A run input of the wrong shape is refused with 400 and the expected
// shape; no run is created.
func TestTypedStartRefusesWrongShape(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	deployServerModule(t, s, nil)
	shape := `expected shape (JSON Schema): {"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"ms":` +
		`{"format":"int64","maximum":9223372036854775807,"minimum":-9223372036854775808,"type":["integer","null"]}},"type":["object","null"],"x-caseFold":true}`
	r := s.cli(t, nil, "start", "srv", "--workflow", "sleeper", "--input", `{"ms":"10"}`, "--id", "bad1")
	wantExit(t, r, 1, "HTTP 400",
		`the input of workflow "sleeper" does not have the expected shape: at $.ms: want integer or null, got string "10"`, shape)
	want(t, "the refused run", s.call(t, "GET", "/v1/runs/bad1", "", nil), 404, "not_found")
	api := s.call(t, "POST", "/v1/runs", "", map[string]any{"module": "srv", "workflow": "sleeper", "input": map[string]any{"ms": []int{1}}, "id": "bad2"})
	want(t, "start with a wrong shape", api, 400, "bad_request")
	if msg := api.errMessage(); !strings.Contains(msg, "at $.ms: want integer or null, got array") || !strings.Contains(msg, shape) {
		t.Errorf("400 message %q lacks the mismatch or the expected shape", msg)
	}
	want(t, "the refused run", s.call(t, "GET", "/v1/runs/bad2", "", nil), 404, "not_found")
	// The same input with the right shape starts the run.
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "sleeper", "--input", `{"ms":10}`, "--id", "bad1"), 0)
	wantExit(t, s.cli(t, nil, "wait", "bad1"), 0, "slept 10ms")
}

// A promise settled with a value of the wrong shape is refused with 400
// and the expected shape; the run goes on waiting, and a value of the
// right shape completes it.
func TestTypedResolveRefusesWrongShape(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--id", "w1"), 0)
	wantExit(t, s.cli(t, nil, "wait", "w1", "--issued", "approve"), 0)
	r := s.cli(t, nil, "resolve", "w1.approve", "--value", `{"approved":true}`)
	stringShape := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":["string","null"]}`
	wantExit(t, r, 1, "HTTP 400", "the value does not have the expected shape: at $: want string or null, got object",
		"expected shape (JSON Schema): "+stringShape, "the promise is still pending")
	api := s.call(t, "POST", "/v1/promises/w1.approve", "", map[string]any{"value": 5})
	want(t, "settle with a wrong shape", api, 400, "bad_request")
	if msg := api.errMessage(); !strings.Contains(msg, "at $: want string or null, got integer 5") || !strings.Contains(msg, stringShape) {
		t.Errorf("400 message %q lacks the mismatch or the expected shape", msg)
	}
	if run := s.getRun(t, "w1", ""); run.Status != "suspended" && run.Status != "running" {
		t.Fatalf("run after the refused values: %+v", run)
	}
	pending := false
	for _, o := range s.outcomes(t, "w1", "").Outcomes {
		pending = pending || (o.Key == "approve" && o.Status == "pending")
	}
	if !pending {
		t.Fatalf("the promise is not pending after the refused values: %s", mustJSON(t, s.outcomes(t, "w1", "")))
	}
	wantExit(t, s.cli(t, nil, "resolve", "w1.approve", "--value", `"yes"`), 0, "promise w1.approve settled (ok)")
	wantExit(t, s.cli(t, nil, "wait", "w1"), 0, "approved: yes")
}
