package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

const continueWorkflows = "./testdata/workflows/continue"

// TestContinueAsNewServer: a run on `skein serve` that continues as new
// twice is a chain ch, ch~2, ch~3 that status, inspect, wait and the API
// show both ways; a promise of a continued run is refused (409) naming
// its successor.
func TestContinueAsNewServer(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	defer s.stop(t)
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, continueWorkflows), "--name", "cont"), 0)
	wantExit(t, s.cli(t, nil, "start", "cont", "--workflow", "loop", "--input", `{"per":2,"total":5}`, "--id", "ch"), 0, "run ch started")

	// wait --follow ends with the chain's last run.
	r := s.cli(t, nil, "wait", "ch", "--follow", "--json", "--quiet")
	wantExit(t, r, 0)
	v := decodeRun(t, r)
	if v.Run != "ch~3" || v.Status != "completed" || v.ContinuedFrom != "ch~2" || v.ContinuedAs != "" ||
		!jsonEq(t, v.Result, `{"n":5,"per":2,"total":5,"runs":3}`) || len(v.Outcomes) != 1 {
		t.Errorf("wait --follow: %+v, want ch~3 completed after 1 step, continued from ch~2", v)
	}
	// Without --follow, a continued run ends the wait (exit 0), naming
	// its successor.
	r = s.cli(t, nil, "wait", "ch", "--quiet")
	wantExit(t, r, 0, "run ch continued as new as run ch~2")
	if r.stdout != "" {
		t.Errorf("wait on a continued run printed %q on stdout, want nothing (it has no result)", r.stdout)
	}
	wantExit(t, s.cli(t, nil, "status", "ch"), 0, "run ch (loop): continued", "continued as: ch~2")
	r = s.cli(t, nil, "status", "ch~2")
	wantExit(t, r, 0, "run ch~2 (loop): continued", "continued from: ch\n", "continued as: ch~3")
	r = s.cli(t, nil, "inspect", "ch~2")
	wantExit(t, r, 0, "continued from: ch\n", "continued as: ch~3", `result: {"n":4,"per":2,"total":5,"runs":2}`)
	if n := strings.Count(r.stdout, "\nadd"); n != 0 || strings.Count(r.stdout, "  add  ") != 2 {
		t.Errorf("inspect ch~2 shows %d+%d step rows, want its own 2\n%s", n, strings.Count(r.stdout, "  add  "), r)
	}
	// The API: each run links both ways; the status filter knows continued.
	for _, c := range []struct{ id, from, as, status string }{
		{"ch", "", "ch~2", "continued"}, {"ch~2", "ch", "ch~3", "continued"}, {"ch~3", "ch~2", "", "completed"}} {
		got := s.getRun(t, c.id, "")
		if got.ContinuedFrom != c.from || got.ContinuedAs != c.as || got.Status != c.status || got.Workflow != "loop" {
			t.Errorf("GET /v1/runs/%s = %+v, want %s, continued_from %q, continued_as %q", c.id, got, c.status, c.from, c.as)
		}
	}
	list := decodeJSON[struct {
		Runs       []apiRun `json:"runs"`
		NextCursor string   `json:"next_cursor"`
	}](t, "runs", s.call(t, "GET", "/v1/runs?status=continued", "", nil).body)
	var ids []string
	for _, run := range list.Runs {
		ids = append(ids, run.ID)
	}
	if !slices.Equal(ids, []string{"ch", "ch~2"}) {
		t.Errorf("runs with status continued: %q, want ch and ch~2", ids)
	}

	// A promise of a run that has continued is refused, naming the successor.
	wantExit(t, s.cli(t, nil, "start", "cont", "--workflow", "promised", "--input", `false`, "--id", "prom"), 0)
	s.awaitStatus(t, "prom", "", "continued")
	s.awaitStatus(t, "prom~2", "", "completed")
	rep := s.call(t, "POST", "/v1/promises/prom.approve", "", `{"value":"yes"}`)
	want(t, "settle a promise of a continued run", rep, 409, "conflict")
	if m := rep.errMessage(); !strings.Contains(m, "run prom has continued as new as run prom~2") {
		t.Errorf("409 message %q does not name the successor", m)
	}
	wantExit(t, s.cli(t, nil, "resolve", "prom.approve", "--value", `"yes"`), 1, "run prom has continued as new as run prom~2")
}

// TestContinueAsNewRun: `skein run` runs a workflow that continues as new
// to the end of its chain, saying so, and prints the last run.
func TestContinueAsNewRun(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	r := skein(t, "", "run", wasmbuild.Build(t, continueWorkflows), "--workflow", "loop", "--input", `{"per":3,"total":7}`, "--id", "loc", "--db", db)
	wantExit(t, r, 0, "run loc continued as new as run loc~2\n", "run loc~2 continued as new as run loc~3\n",
		"run loc~3 (loop): completed", "continued from: loc~2")
	r = skein(t, "", "inspect", "loc", "--db", db, "--json")
	wantExit(t, r, 0)
	v := decodeRun(t, r)
	var in struct{ N, Runs int }
	if err := json.Unmarshal(v.Result, &in); err != nil || v.Status != "continued" || v.ContinuedAs != "loc~2" || in.N != 3 || in.Runs != 1 {
		t.Errorf("inspect loc: %+v (%v), want continued as loc~2 with n=3 carried", v, err)
	}
	// A continued run is final: resume refuses it, naming the successor.
	wantExit(t, skein(t, "", "resume", "loc", "--db", db), 1, "run loc is continued: it continued as new as run loc~2 and is never resumed")
}
