package main

// Typed values are checked exactly as the guest decodes them (issue 32,
// item "Broken 1"): integer ranges, duplicate keys, keys that differ only
// in case and null fields, through a real `skein serve`, for promise
// settlements and run inputs.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/guestbuild"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// typedWorkflows is the package of the workflows these tests run.
const typedWorkflows = "./testdata/workflows/typed"

// int64Range is how a mismatch names the range of a Go int.
const int64Range = "integer in int64 range [-9223372036854775808, 9223372036854775807]"

// exactCase is a value the guest's decode refuses, for the workflow of
// type T, with the mismatch the host names.
type exactCase struct {
	typ, value, mismatch string
}

// exactCases are the values the issue quotes, each of which the old check
// accepted while the guest's decode failed the run.
var exactCases = []exactCase{
	{"Int", `9223372036854775808`, "at $: want " + int64Range + ", got integer 9223372036854775808"},
	{"Count", `{"n":100000000000000000000}`, "at $.n: want " + int64Range + ", got integer 100000000000000000000"},
	{"Decision", `{"by":1,"by":"x"}`, `at $.by: want string or null, got integer 1`},
	{"Decision", `{"BY":1}`, `at $.BY: want string or null, got integer 1 (Go decodes key "BY" into property "by", ignoring case)`},
	{"Decision", `{"Approved":"yes"}`, `at $.Approved: want boolean or null, got string "yes" (Go decodes key "Approved" into property "approved", ignoring case)`},
}

// goodValues are values of each type the guest decodes, and what it
// prints of them.
var goodValues = map[string][2]string{
	"Int":      {`9223372036854775807`, `9223372036854775807`},
	"Count":    {`{"n":-9223372036854775808}`, `{N:-9223372036854775808}`},
	"Decision": {`{"by":"x","BY":"ana","approved":true}`, `{Approved:true By:ana}`},
}

func startTyped(t *testing.T) *skeinServer {
	t.Helper()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, typedWorkflows), "--name", "typed"), 0)
	return s
}

// Each value the issue quotes is refused with 400 and its mismatch when
// it settles a typed promise, by the CLI and by the API; the promise stays
// pending, and a good value then completes the run with what the guest
// decoded.
func TestTypedResolveExact(t *testing.T) {
	t.Parallel()
	s := startTyped(t)
	for i, c := range exactCases {
		id := fmt.Sprintf("p%d", i)
		wantExit(t, s.cli(t, nil, "start", "typed", "--workflow", "promise"+c.typ, "--id", id), 0)
		wantExit(t, s.cli(t, nil, "wait", id, "--issued", "p"), 0)
		r := s.cli(t, nil, "resolve", id+".p", "--value", c.value)
		wantExit(t, r, 1, "HTTP 400", "the value does not have the expected shape: "+c.mismatch+";", "the promise is still pending")
		api := s.call(t, "POST", "/v1/promises/"+id+".p", "", `{"value":`+c.value+`}`)
		want(t, "settle "+c.value, api, 400, "bad_request")
		if msg := api.errMessage(); !strings.Contains(msg, c.mismatch+";") {
			t.Errorf("settle %s: 400 message %q lacks %q", c.value, msg, c.mismatch)
		}
		if o := outcomeAt(t, s, id, "p"); o != "pending" {
			t.Errorf("%s: the promise is %s after the refused values (the run: %+v)", id, o, s.awaitStatus(t, id, "", "completed", "failed"))
			continue
		}
		good := goodValues[c.typ]
		wantExit(t, s.cli(t, nil, "resolve", id+".p", "--value", good[0]), 0, "settled (ok)")
		if run := s.awaitStatus(t, id, "", "completed", "failed"); run.Status != "completed" || string(run.Result) != fmt.Sprintf("%q", good[1]) {
			t.Errorf("%s after %s: %s %s %q", id, good[0], run.Status, run.Result, run.Error)
		}
	}
	// A null field is what Go decodes as the zero value: accepted.
	wantExit(t, s.cli(t, nil, "start", "typed", "--workflow", "promiseDecision", "--id", "null1"), 0)
	wantExit(t, s.cli(t, nil, "wait", "null1", "--issued", "p"), 0)
	wantExit(t, s.cli(t, nil, "resolve", "null1.p", "--value", `{"approved":null,"by":"ana"}`), 0, "settled (ok)")
	if run := s.awaitStatus(t, "null1", "", "completed", "failed"); string(run.Result) != `"{Approved:false By:ana}"` {
		t.Errorf("null field: %s %s %q", run.Status, run.Result, run.Error)
	}
}

// Each value the issue quotes is refused with 400 and its mismatch as a
// run's input, by the CLI and by the API, and no run exists; a null field
// is accepted.
func TestTypedStartExact(t *testing.T) {
	t.Parallel()
	s := startTyped(t)
	for i, c := range exactCases {
		id := fmt.Sprintf("i%d", i)
		wf := "input" + c.typ
		r := s.cli(t, nil, "start", "typed", "--workflow", wf, "--input", c.value, "--id", id)
		wantExit(t, r, 1, "HTTP 400", fmt.Sprintf("the input of workflow %q does not have the expected shape: %s;", wf, c.mismatch))
		api := s.call(t, "POST", "/v1/runs", "", fmt.Sprintf(`{"module":"typed","workflow":%q,"input":%s,"id":%q}`, wf, c.value, id))
		want(t, "start with "+c.value, api, 400, "bad_request")
		if msg := api.errMessage(); !strings.Contains(msg, c.mismatch+";") {
			t.Errorf("start with %s: 400 message %q lacks %q", c.value, msg, c.mismatch)
		}
		want(t, "the refused run", s.call(t, "GET", "/v1/runs/"+id, "", nil), 404, "not_found")
	}
	wantExit(t, s.cli(t, nil, "start", "typed", "--workflow", "inputDecision", "--input", `{"approved":null,"by":"ana"}`, "--id", "null1"), 0)
	if run := s.awaitStatus(t, "null1", "", "completed", "failed"); string(run.Result) != `"{Approved:false By:ana}"` {
		t.Errorf("null field: %s %s %q", run.Status, run.Result, run.Error)
	}
}

// outcomeAt is the status of the outcome at key of run id ("" if none).
func outcomeAt(t *testing.T, s *skeinServer, id, key string) string {
	t.Helper()
	for _, o := range s.outcomes(t, id, "").Outcomes {
		if o.Key == key {
			return o.Status
		}
	}
	return ""
}

// A Rust workflow's typed promise (Ctx::promise_of) and typed input
// (register_typed) refuse values their Rust types do not decode with 400
// through a real server, before anything is stored; good values complete
// the runs with what the Rust decoder made of them.
func TestTypedRust(t *testing.T) {
	t.Parallel()
	wasm := guestbuild.Rust(t, "testdata/rust/typed")
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	wantExit(t, s.cli(t, nil, "deploy", wasm, "--name", "rtyped"), 0)
	wantExit(t, s.cli(t, nil, "start", "rtyped", "--workflow", "decide", "--id", "d1"), 0)
	wantExit(t, s.cli(t, nil, "wait", "d1", "--issued", "p"), 0)
	for value, mismatch := range map[string]string{
		`{"approved":"yes","by":"x"}`:         `at $.approved: want boolean, got string "yes"`,
		`{"approved":true}`:                   `at $: missing required property "by"`,
		`{"approved":true,"by":null}`:         `at $.by: want string, got null`,
		`{"by":1,"by":"x","approved":true}`:   `at $.by: want string, got integer 1`,
		`{"approved":true,"by":"x","note":7}`: `at $.note: want string or null, got integer 7`,
		`null`:                                `at $: want object, got null`,
	} {
		r := s.cli(t, nil, "resolve", "d1.p", "--value", value)
		wantExit(t, r, 1, "HTTP 400", "the value does not have the expected shape: "+mismatch+";", "the promise is still pending")
	}
	if o := outcomeAt(t, s, "d1", "p"); o != "pending" {
		t.Fatalf("the promise is %s after the refused values", o)
	}
	wantExit(t, s.cli(t, nil, "resolve", "d1.p", "--value", `{"approved":true,"by":"ana","BY":7}`), 0, "settled (ok)")
	if run := s.awaitStatus(t, "d1", "", "completed", "failed"); string(run.Result) != `"approved=true by=ana note=None"` {
		t.Errorf("d1: %s %s %q", run.Status, run.Result, run.Error)
	}

	for i, c := range [][2]string{
		{`{"n":9223372036854775808}`, `at $.n: want integer in int64 range [-9223372036854775808, 9223372036854775807], got integer 9223372036854775808`},
		{`{"n":1,"step":256}`, `at $.step: want integer in uint8 range [0, 255], got integer 256`},
		{`null`, `at $: want object, got null`},
	} {
		id := fmt.Sprintf("c%d", i)
		r := s.cli(t, nil, "start", "rtyped", "--workflow", "count", "--input", c[0], "--id", id)
		wantExit(t, r, 1, "HTTP 400", `the input of workflow "count" does not have the expected shape: `+c[1]+";")
		want(t, "the refused run", s.call(t, "GET", "/v1/runs/"+id, "", nil), 404, "not_found")
	}
	wantExit(t, s.cli(t, nil, "start", "rtyped", "--workflow", "count", "--input", `{"n":41}`, "--id", "c-ok"), 0)
	if run := s.awaitStatus(t, "c-ok", "", "completed", "failed"); string(run.Result) != "42" {
		t.Errorf("c-ok: %s %s %q", run.Status, run.Result, run.Error)
	}
}
