package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// Retention through real processes (docs/operations.md, "Retention"):
// `skein serve --retention` deletes the runs that ended, and keeps the
// ones live runs need; `skein runs prune` and DELETE /v1/runs/{id} by
// hand, on SQLite and PostgreSQL.

// retentionRuns deploys testdata/workflows/continue on s and starts the
// runs of the retention tests: "done" completes; "chain" continues twice
// and its last run, "chain~3", waits for a promise; "fam" waits after its
// child, "fam.1", completed.
func retentionRuns(t *testing.T, s *skeinServer) {
	t.Helper()
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, "./testdata/workflows/continue"), "--name", "cont"), 0)
	wantExit(t, s.cli(t, nil, "start", "cont", "--workflow", "loop", "--input", `{"per":5,"total":1}`, "--id", "done"), 0)
	wantExit(t, s.cli(t, nil, "start", "cont", "--workflow", "waitchain", "--input", `0`, "--id", "chain"), 0)
	wantExit(t, s.cli(t, nil, "start", "cont", "--workflow", "family", "--input", `{}`, "--id", "fam"), 0)
	s.awaitStatus(t, "done", "", "completed")
	// A run's successor is created in the commit that ends it.
	s.awaitStatus(t, "chain", "", "continued")
	s.awaitStatus(t, "chain~2", "", "continued")
	s.awaitStatus(t, "chain~3", "", "suspended")
	s.awaitStatus(t, "fam", "", "suspended") // after its child's end
	s.awaitStatus(t, "fam.1", "", "completed")
}

// awaitGone waits until GET /v1/runs/{id} answers 404 for every id.
func (s *skeinServer) awaitGone(t *testing.T, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for _, id := range ids {
		for s.call(t, "GET", "/v1/runs/"+id, "", nil).status != 404 {
			if time.Now().After(deadline) {
				t.Fatalf("run %s still answers after %v; want it pruned (404)", id, runWait)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// wantKept checks that every id still answers GET /v1/runs/{id}.
func (s *skeinServer) wantKept(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if r := s.call(t, "GET", "/v1/runs/"+id, "", nil); r.status != 200 {
			t.Errorf("run %s: %s; want it kept", id, r)
		}
	}
}

// testServeRetention: a server with a retention of 1s prunes the ended
// run, keeps the links of a chain whose last run waits and the child of
// a parent that waits (DELETE refuses them with 409, naming the rule),
// and prunes the chain once it ended.
func testServeRetention(t *testing.T, storeFlags []string) {
	s := startServe(t, storeFlags, nil, "--poll", "50ms", "--retention", "1s", "--prune-interval", "50ms")
	retentionRuns(t, s)
	s.awaitGone(t, "done")
	time.Sleep(1200 * time.Millisecond) // past the retention of every run that ended
	s.wantKept(t, "chain", "chain~2", "chain~3", "fam", "fam.1")
	for id, rule := range map[string]string{
		"chain": "the last run of its continue-as-new chain, chain~3, has not ended",
		"fam.1": "its parent run fam has not ended",
		"fam":   "it has not ended (status suspended)",
	} {
		r := s.call(t, "DELETE", "/v1/runs/"+id, "", nil)
		if r.status != 409 || r.errCode() != "conflict" || !strings.Contains(string(r.body), rule) {
			t.Errorf("DELETE /v1/runs/%s: %s; want 409 conflict naming %q", id, r, rule)
		}
	}
	wantExit(t, s.cli(t, nil, "resolve", "chain~3.go", "--value", `"go"`), 0)
	s.awaitGone(t, "chain", "chain~2", "chain~3")
	s.wantKept(t, "fam", "fam.1")
	if n := s.metrics(t)[`skein_runs_pruned_total{namespace="default"}`]; n < 4 {
		t.Errorf("skein_runs_pruned_total = %v; want at least 4", n)
	}
}

// testRunsPrune: `skein runs prune` against a server, a dry run then the
// prune, and DELETE of a run; then against the database itself.
func testRunsPrune(t *testing.T, storeFlags []string) {
	s := startServe(t, storeFlags, nil, "--poll", "50ms")
	retentionRuns(t, s)
	dry := s.cli(t, nil, "runs", "prune", "--older-than", "0s", "--dry-run")
	wantExit(t, dry, 0, "would delete 1 runs", "  done\n")
	s.wantKept(t, "done")
	wantExit(t, s.cli(t, nil, "runs", "prune", "--older-than", "0s"), 0, "deleted 1 runs", "  done\n")
	s.awaitGone(t, "done")
	wantExit(t, s.cli(t, nil, "runs", "prune", "--older-than", "0d"), 0, "deleted 0 runs")
	s.wantKept(t, "chain", "chain~2", "chain~3", "fam", "fam.1")
	wantExit(t, s.cli(t, nil, "resolve", "fam.go", "--value", `"go"`), 0)
	s.awaitStatus(t, "fam", "", "completed")
	if r := s.send(t, "DELETE", "/v1/runs/fam.1", nil, nil); r.status != 204 {
		t.Errorf("DELETE /v1/runs/fam.1 of an ended family: %s; want 204", r)
	}
	s.awaitGone(t, "fam.1")
	wantExit(t, s.cli(t, nil, "runs", "prune", "--before", "2000-01-01T00:00:00Z", "--older-than", "1d"), exitUsage, "one of them")
	s.stop(t)

	// The database itself, without a server.
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	local := append([]string{"runs", "prune", "--before", future}, storeFlags...)
	wantExit(t, skeinEnv(t, nil, append(local, "--dry-run")...), 0, "would delete 1 runs", "  fam\n")
	wantExit(t, skeinEnv(t, nil, local...), 0, "deleted 1 runs", "  fam\n")
	wantExit(t, skeinEnv(t, nil, local...), 0, "deleted 0 runs")
}

func TestServeRetention(t *testing.T) {
	testgroup.Slow(t, "heavy-scenarios", "a server that prunes runs a second after they end, and waits past their retention")
	t.Parallel()
	testServeRetention(t, []string{"--db", filepath.Join(t.TempDir(), "skein.db")})
}

func TestRunsPrune(t *testing.T) {
	t.Parallel()
	testRunsPrune(t, []string{"--db", filepath.Join(t.TempDir(), "skein.db")})
}

func TestServeRetentionPostgres(t *testing.T) {
	testgroup.Slow(t, "heavy-scenarios", "a server that prunes runs a second after they end, and waits past their retention")
	t.Parallel()
	testServeRetention(t, []string{"--store", postgresSchema(t)})
}

func TestRunsPrunePostgres(t *testing.T) {
	t.Parallel()
	testRunsPrune(t, []string{"--store", postgresSchema(t)})
}
