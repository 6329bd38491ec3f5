package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

const resetWorkflows = "./testdata/workflows/reset"

// resetThroughServer drives the reset of runs through a real skein
// serve s: a completed run of seq reset to key 3 with the CLI (the new
// run keeps 1 and 2, executes 3 and 4, and completes; both runs show
// their links in the API and in skein status), a suspended run of wait
// reset through POST /v1/runs/{id}/reset, and the refusals of bad
// resets with their HTTP statuses and messages.
func resetThroughServer(t *testing.T, s *skeinServer) {
	t.Helper()
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, resetWorkflows), "--name", "reset"), 0)
	wantExit(t, s.cli(t, nil, "start", "reset", "--workflow", "seq", "--input", `{"tag":"x"}`, "--id", "s1"), 0)
	s.awaitStatus(t, "s1", "", "completed")
	r := s.cli(t, nil, "reset", "s1", "--to", "3", "--input", `{"tag":"y"}`, "--json")
	wantExit(t, r, 0)
	nr := decodeJSON[apiRun](t, "skein reset --json", []byte(r.stdout))
	if nr.ID != "s1~reset-1" || nr.ResetFrom != "s1" || nr.ResetKey != "3" {
		t.Fatalf("new run = %+v, want s1~reset-1 reset from s1 at 3", nr)
	}
	end := s.awaitStatus(t, nr.ID, "", "completed", "failed")
	if !jsonEq(t, end.Result, `["a@x","b@x","c@y","d@y"]`) {
		t.Errorf("new run: %s %s, want the kept a and b and c, d run again with the new input", end.Status, end.Result)
	}
	if v := s.outcomes(t, nr.ID, ""); !slices.Equal(v.keys(), []string{"1", "2", "3", "4"}) || v.ResetFrom != "s1" {
		t.Errorf("new run's outcomes: %v, reset from %q", v.keys(), v.ResetFrom)
	}
	if o := s.getRun(t, "s1", ""); o.Status != "reset" || o.ResetTo != nr.ID || !jsonEq(t, o.Result, `["a@x","b@x","c@x","d@x"]`) {
		t.Errorf("original: %+v, want reset to %s with its result kept", o, nr.ID)
	}
	wantExit(t, s.cli(t, nil, "status", "s1"), 0, "run s1 (seq): reset", "reset as: s1~reset-1")
	wantExit(t, s.cli(t, nil, "status", nr.ID), 0, "reset from: s1 at 3")
	wantExit(t, s.cli(t, nil, "wait", "s1"), 0, "run s1 was reset as run s1~reset-1: wait for it with skein wait s1~reset-1")

	wantExit(t, s.cli(t, nil, "start", "reset", "--workflow", "wait", "--input", `{"tag":"x"}`, "--id", "w1"), 0)
	s.awaitStatus(t, "w1", "", "suspended")
	rep := s.call(t, "POST", "/v1/runs/w1/reset", "", `{"to":"1","id":"w1-again"}`)
	want(t, "POST reset of w1", rep, http.StatusCreated, "")
	if got := decodeJSON[apiRun](t, "reset answer", rep.body); got.ID != "w1-again" || got.ResetFrom != "w1" {
		t.Errorf("reset answer: %+v", got)
	}
	s.awaitStatus(t, "w1-again", "", "suspended")
	want(t, "settling the reset run's promise", s.call(t, "POST", "/v1/promises/w1.2", "", `{"value":"late"}`), http.StatusConflict, "conflict")

	for _, c := range []struct {
		path, body string
		status     int
		msg        string
	}{
		{"/v1/runs/nope/reset", `{"to":"1"}`, http.StatusNotFound, "nope"},
		{"/v1/runs/s1~reset-1/reset", `{"to":"9"}`, http.StatusBadRequest, `key "9" is not in the run's journal`},
		{"/v1/runs/s1~reset-1/reset", `{}`, http.StatusBadRequest, `give "to"`},
		{"/v1/runs/w1-again/reset", `{"to":"2"}`, http.StatusBadRequest, `the op at key "2" is pending`},
		{"/v1/runs/s1/reset", `{"to":"1"}`, http.StatusConflict, "only the newest run of a chain can be reset, reset s1~reset-1 instead"},
		{"/v1/runs/s1~reset-1/reset", `{"to":"1","input":{"tag":`, http.StatusBadRequest, ""},
		{"/v1/runs/s1~reset-1/reset", `{"to":"1","id":"w1"}`, http.StatusConflict, "a run with this id exists"},
	} {
		rep := s.call(t, "POST", c.path, "", c.body)
		if rep.status != c.status || !strings.Contains(rep.errMessage(), c.msg) {
			t.Errorf("POST %s %s: %s; want HTTP %d with %q", c.path, c.body, rep, c.status, c.msg)
		}
	}
	wantExit(t, s.cli(t, nil, "reset", "s1~reset-1"), exitUsage, "--to KEY")
}

// skein reset through a real skein serve on SQLite; then skein check
// --upgrade replays the suspended reset run from the database against
// the module and finds it exact.
func TestResetServe(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	s := startServer(t, db, nil, "--poll", "50ms")
	resetThroughServer(t, s)
	s.stop(t)
	r := skein(t, "", "check", "--upgrade", wasmbuild.Build(t, resetWorkflows), "--db", db, "--json")
	wantExit(t, r, 0, `"w1-again"`)
	if strings.Contains(r.stdout, `"w1"`) {
		t.Errorf("skein check --upgrade checked the reset run w1:\n%s", r)
	}
}

// The same on Postgres.
func TestResetServePostgres(t *testing.T) {
	t.Parallel()
	s := startPostgresServer(t, postgresSchema(t))
	defer s.stop(t)
	resetThroughServer(t, s)
}

// skein reset --db resets a run in a local database and drives the new
// run here, like skein resume, onto another module file.
func TestResetLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "skein.db")
	wantExit(t, skein(t, dir, "run", wasmbuild.Build(t, resetWorkflows), "--workflow", "seq", "--input", `{"tag":"x"}`, "--id", "l1", "--db", db), 0)
	r := skein(t, dir, "reset", "l1", "--to", "3", "--module", wasmbuild.Build(t, resetWorkflows+"/v2"), "--db", db, "--json")
	wantExit(t, r, 0)
	v := decodeRun(t, r)
	if v.Run != "l1~reset-1" || v.Status != "completed" || !jsonEq(t, v.Result, `["a@x","b@x","v2:c@x","v2:d@x"]`) || v.ResetFrom != "l1" || v.ResetKey != "3" {
		t.Fatalf("skein reset --db: %+v", v)
	}
	wantExit(t, skein(t, dir, "inspect", "l1", "--db", db), 0, "reset as: l1~reset-1")
	wantExit(t, skein(t, dir, "reset", "nope", "--to", "1", "--db", db), exitFailed, `no run "nope" in this database`)
	wantExit(t, skein(t, dir, "reset", "l1~reset-1", "--to", "1", "--input", "{", "--db", db), exitUsage, "--input is not valid JSON")
}
