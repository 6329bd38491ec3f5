package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// attrRun is the part of a run's document these tests read.
type attrRun struct {
	ID         string         `json:"id"`
	Status     string         `json:"status"`
	Error      string         `json:"error"`
	Result     string         `json:"-"`
	Attributes map[string]any `json:"attributes"`
}

func getAttrRun(t *testing.T, s *skeinServer, path string) attrRun {
	t.Helper()
	r := s.call(t, "GET", path, "", nil)
	if r.status != 200 {
		t.Fatalf("GET %s: %s", path, r)
	}
	var v attrRun
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return v
}

// attrListIDs is the ids GET /v1/runs?query answers.
func attrListIDs(t *testing.T, s *skeinServer, query string) string {
	t.Helper()
	r := s.call(t, "GET", "/v1/runs?"+query, "", nil)
	if r.status != 200 {
		t.Fatalf("GET /v1/runs?%s: %s", query, r)
	}
	var l struct {
		Runs []attrRun `json:"runs"`
	}
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, run := range l.Runs {
		ids = append(ids, run.ID)
	}
	return strings.Join(ids, " ")
}

// serveAttributes declares search attributes with the CLI, starts runs
// of examples/attrs with initial attributes, and reads them back through
// the API and skein status; filters the runs list by them; and checks
// the errors of undeclared names and wrong types at each door.
func serveAttributes(t *testing.T, s *skeinServer) {
	deployExample(t, s, "", "./examples/attrs")
	for _, a := range []string{"customer int", "region string", "stage string", "priority float", "closed bool", "closed_at time", "source string"} {
		name, typ, _ := strings.Cut(a, " ")
		wantExit(t, s.cli(t, nil, "attribute", "create", name, "--type", typ), 0, "search attribute "+name+" ("+typ+") created")
	}
	wantExit(t, s.cli(t, nil, "attribute", "create", "customer", "--type", "string"), exitFailed, "409", "exists")
	wantExit(t, s.cli(t, nil, "attribute", "create", "bad", "--type", "decimal"), exitFailed, "400", `unknown type "decimal"`)
	wantExit(t, s.cli(t, nil, "attribute", "create", "9lives", "--type", "int"), exitFailed, "400", "does not start with a letter")
	wantExit(t, s.cli(t, nil, "attribute", "list"), 0, "customer  int", "closed_at  time")

	in := `{"customer":42,"region":"eu","priority":2.5,"extra":"undeclared"}`
	wantExit(t, s.cli(t, nil, "start", "attrs", "--id", "t1", "--input", in, "--attr", "source=cli", "--attr", "stage=new"), 0)
	wantExit(t, s.cli(t, nil, "start", "attrs", "--id", "t2", "--input", `{"customer":7,"region":"us"}`), 0)
	wantExit(t, s.cli(t, nil, "start", "attrs", "--id", "bad", "--attr", "customer=x"), exitUsage, "--attr customer: the attribute is a int")
	wantExit(t, s.cli(t, nil, "start", "attrs", "--id", "bad", "--attr", "nope=1"), exitUsage, "--attr nope: no such search attribute is declared")
	r := s.call(t, "POST", "/v1/runs", "", map[string]any{"module": "attrs", "id": "bad", "attributes": map[string]any{"customer": "42"}})
	want(t, "start with a string for an int", r, 400, "bad_request")
	if !strings.Contains(r.errMessage(), `search attribute "customer" is a int: got the string "42"`) {
		t.Errorf("start with a string for an int: %s", r)
	}
	if r := s.call(t, "GET", "/v1/runs/bad", "", nil); r.status != 404 {
		t.Errorf("a refused start created run bad: %s", r)
	}

	s.awaitStatus(t, "t1", "", "completed")
	s.awaitStatus(t, "t2", "", "completed")
	run := getAttrRun(t, s, "/v1/runs/t1")
	a := run.Attributes
	if a["customer"] != 42.0 || a["region"] != "eu" || a["stage"] != "done" || a["source"] != "cli" || a["priority"] != 2.5 || a["closed"] != true {
		t.Errorf("attributes of t1: %v", a)
	}
	if ts, _ := a["closed_at"].(string); !strings.HasSuffix(ts, "Z") || len(ts) < 20 {
		t.Errorf("closed_at of t1: %v", a["closed_at"])
	}
	wantExit(t, s.cli(t, nil, "status", "t1"), 0, "attributes: closed=true  closed_at=", "customer=42  priority=2.5  region=eu  source=cli  stage=done")
	v := s.outcomes(t, "t1", "")
	if !jsonEq(t, v.Result, `{"stage":"done","extra_error":"search attribute \"undeclared\" is not declared (skein attribute create undeclared --type T)"}`) {
		t.Errorf("result of t1: %s", v.Result)
	}

	for q, ids := range map[string]string{
		"attr.customer=42": "t1", "attr.customer=7": "t2", "attr.region=us": "t2", "attr.closed=true": "t1 t2",
		"attr.customer=42&attr.region=us": "", "attr.source=cli": "t1", "attr.priority=2.5": "t1",
	} {
		if got := attrListIDs(t, s, q); got != ids {
			t.Errorf("GET /v1/runs?%s = [%s], want [%s]", q, got, ids)
		}
	}
	for q, msg := range map[string]string{
		"attr.customer=x": "attr.customer: the attribute is a int", "attr.nope=1": `attribute "nope" is not declared`,
	} {
		r := s.call(t, "GET", "/v1/runs?"+q, "", nil)
		if want(t, q, r, 400, "bad_request"); !strings.Contains(r.errMessage(), msg) {
			t.Errorf("GET /v1/runs?%s: %s; want %q", q, r, msg)
		}
	}
	wantExit(t, s.cli(t, nil, "attribute", "delete", "source"), 0, "deleted")
	if got := getAttrRun(t, s, "/v1/runs/t1").Attributes; got["source"] != nil || got["customer"] != 42.0 {
		t.Errorf("after deleting source: %v", got)
	}
	wantExit(t, s.cli(t, nil, "attribute", "delete", "source"), exitFailed, "404")
}

// TestServeAttributes runs serveAttributes on SQLite, with an eviction at
// every idle point; then, the server stopped, resumes a held run on a
// module that sets another value at its first op: the run diverges at
// that op's key.
func TestServeAttributes(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	s := startServer(t, db, nil, "--evict", "always")
	serveAttributes(t, s)
	wantExit(t, s.cli(t, nil, "start", "attrs", "--id", "held", "--input", `{"customer":1,"region":"eu","hold":"1h"}`), 0)
	s.awaitStatus(t, "held", "", "suspended")
	s.stop(t)
	v2 := wasmbuild.Build(t, "./testdata/workflows/attrsv2")
	r := skein(t, "", "resume", "held", "--module", v2, "--db", db)
	wantExit(t, r, exitFailed, `code mismatch at key "1"`, "attrs:")
}

// TestServeAttributesPostgres is serveAttributes on Postgres.
func TestServeAttributesPostgres(t *testing.T) {
	t.Parallel()
	s := startServe(t, []string{"--store", postgresSchema(t)}, nil, "--poll", "50ms", "--evict", "always")
	serveAttributes(t, s)
}
