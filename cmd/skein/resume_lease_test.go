package main

// End-to-end tests of the rule that `skein resume` never executes a run
// in two places at once: `skein resume RUN --module v2.wasm` on the
// database of a `skein serve` that is executing RUN waits for the
// server's worker, and resumes the run only once the server is done with
// it, on SQLite and on Postgres. The workflow (testdata/workflows/jackpot)
// is the lottery's (lease_test.go) around an external promise: version 1
// makes its draws and fails, version 2 makes the same draws and then the
// payout's. Every body execution prints a line, which the tests count in
// the guest output of both processes: `skein resume --guest-output`, and
// the server's debug log ("guest output" lines).

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// The two versions of the jackpot workflow.
const (
	jackpotV1 = "./testdata/workflows/jackpot/v1"
	jackpotV2 = "./testdata/workflows/jackpot/v2"
)

// serverBodies returns the server's guest output for run, read from its
// JSON debug log, as the stderr of a result: "[RUN] line" per line, as
// bodies reads.
func serverBodies(t *testing.T, s *skeinServer, run string) result {
	t.Helper()
	var out strings.Builder
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		var rec struct{ Msg, Run, Line string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "guest output" && rec.Run == run {
			fmt.Fprintf(&out, "[%s] %s\n", rec.Run, rec.Line)
		}
	}
	return result{args: []string{"serve"}, stderr: out.String()}
}

// serverEnded returns the statuses the server logged run ending with
// ("run ended" lines), in order.
func serverEnded(s *skeinServer, run string) []string {
	var ended []string
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		var rec struct{ Msg, Run, Status string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "run ended" && rec.Run == run {
			ended = append(ended, rec.Status)
		}
	}
	return ended
}

// checkDraws fails the test unless the bodies who executed (in r's
// guest output) are those of draws from..to, once each.
func checkDraws(t *testing.T, who string, r result, from, to int) {
	t.Helper()
	got := bodies(r)
	for i := from; i <= to; i++ {
		if len(got[i]) != 1 {
			t.Errorf("%s executed the body of draw %d %d times (values %q); want once", who, i, len(got[i]), got[i])
		}
	}
	for i, vs := range got {
		if i < from || i > to {
			t.Errorf("%s executed the body of draw %d (values %q); want only draws %d..%d", who, i, vs, from, to)
		}
	}
}

// finishResumed is finish for a run that ends twice: the "(run)" entry
// may change (version 1 failed it, version 2 completed it); no settled
// outcome may. It returns the journal with the run's last state.
func (w *journalWatch) finishResumed(t *testing.T) journal {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	var changed []string
	for _, c := range w.changes {
		if !strings.HasPrefix(c, "(run): ") {
			changed = append(changed, c)
		}
	}
	if len(changed) > 0 {
		t.Errorf("recorded values changed after they were first read (%d reads):\n%s", w.reads, strings.Join(changed, "\n"))
	}
	if w.reads == 0 {
		t.Errorf("the journal was never read: %q", w.errs)
	}
	j := maps.Clone(w.first)
	j["(run)"] = w.last["(run)"]
	return j
}

func TestResumeAgainstServeSQLite(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "skein resume against a server holding the run's lease")
	testResumeAgainstServe(t, sqliteBackend(t))
}
func TestResumeAgainstServePostgres(t *testing.T) { testResumeAgainstServe(t, postgresBackend(t)) }

// testResumeAgainstServe: `skein resume` on the database of a running
// `skein serve`, of a run the server fails (resumeFailedRun) and of one
// it completes (resumeCompletingRun), then of a completed run.
func testResumeAgainstServe(t *testing.T, b backend) {
	s := startServe(t, b.flags, nil, "--poll", "50ms", "--log-level", "debug", "--log-format", "json")
	for name, pkg := range map[string]string{"jackpot": jackpotV1, "jackpot2": jackpotV2} {
		data, err := os.ReadFile(wasmbuild.Build(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		want(t, "deploy", s.call(t, "POST", "/v1/modules?name="+name, "", data), 201, "")
	}
	resumeFailedRun(t, b, s)
	resumeCompletingRun(t, b, s)
	s.stop(t)
}

// resumeFailedRun: the server executes a run of jackpot v1: its first
// draws, then (once the test resolves the promise through the server's
// API) the draws after it, and fails. While the server executes those,
// `skein resume RUN --module v2.wasm` runs on the same database: it waits
// for the server's worker, then resumes the failed run with v2, which
// replays the server's draws and executes only the payout's. Every body
// executes once over both processes, no recorded outcome ever changes,
// and the run completes with the values the bodies drew. Then a `skein
// resume` of the completed run is refused and changes nothing.
func resumeFailedRun(t *testing.T, b backend, s *skeinServer) {
	// The draws after the promise last 6 s: long enough for skein resume
	// to compile v2 and reach the run while the server executes them.
	const id, before, after, payout, ms = "jp-1", 2, 15, 3, 400
	n := before + after + payout
	w := watchJournal(b, id)
	want(t, "start", s.call(t, "POST", "/v1/runs", "", map[string]any{"module": "jackpot", "workflow": "jackpot", "id": id,
		"input": map[string]int{"before": before, "after": after, "payout": payout, "ms": ms}}), 201, "")
	s.awaitStatus(t, id, "", "suspended")
	want(t, "resolve", s.call(t, "POST", "/v1/promises/"+id+".go", "", map[string]any{"value": "now"}), 200, "")
	awaitDraws(t, s, id, before+1) // the server is mid-way: its worker holds the lease
	v2 := wasmbuild.Build(t, jackpotV2)
	res := skein(t, "", append([]string{"resume", id, "--module", v2, "--guest-output", "--json"}, b.flags...)...)
	final := w.finishResumed(t)
	srv := serverBodies(t, s, id)

	if !strings.Contains(res.stderr, "is being executed by worker") || !strings.Contains(res.stderr, "waiting up to") {
		t.Errorf("skein resume did not say that it waits for the server's worker\n%s", res)
	}
	if got := serverEnded(s, id); !slices.Equal(got, []string{"failed"}) {
		t.Errorf("the server ended %s as %q; want failed (by v1), once", id, got)
	}
	checkDraws(t, "the server", srv, 1, before+after)
	checkDraws(t, "skein resume", res, before+after+1, n)
	checkBodiesOnce(t, n, srv, res)
	checkLotteryRun(t, res, final, n)
	if len(final) != n+2 {
		t.Errorf("journal %q: want %d settled draws, the promise and the run", final, n)
	}
	checkDrawnValues(t, res, srv)
	// skein resume stored v2 under no new name: the server's name for it
	// still resolves.
	if r := s.call(t, "GET", "/v1/modules/jackpot2", "", nil); r.status != 200 || !strings.Contains(string(r.body), `"name":"jackpot2"`) {
		t.Errorf("the module deployed as jackpot2, after skein resume --module %s: %s", filepath.Base(v2), r)
	}
	if r := s.awaitStatus(t, id, "", "completed"); r.Status != "completed" {
		t.Errorf("the server answers status %s; want completed", r.Status)
	}

	// The run has completed: resuming it is refused, nothing executes.
	w = watchJournal(b, id)
	again := skein(t, "", append([]string{"resume", id, "--module", v2, "--guest-output"}, b.flags...)...)
	if j := w.finish(t); !maps.Equal(j, final) {
		t.Errorf("journal changed by a resume of a completed run\nbefore: %q\nafter:  %q", final, j)
	}
	wantExit(t, again, exitFailed, "run "+id+" is completed", "is never resumed", "nothing executed")
	checkBodiesOnce(t, 0, again)
}

// resumeCompletingRun: `skein resume RUN` of a run the server executes
// (jackpot v2, no promise) and completes meanwhile: skein resume waits
// for the server's worker, then refuses the completed run. The server
// executed every body once, skein resume none, and nothing recorded ever
// changed.
func resumeCompletingRun(t *testing.T, b backend, s *skeinServer) {
	const id, n, ms = "jp-2", 8, 400
	w := watchJournal(b, id)
	want(t, "start", s.call(t, "POST", "/v1/runs", "", map[string]any{"module": "jackpot2", "workflow": "jackpot", "id": id,
		"input": map[string]int{"before": n, "ms": ms}}), 201, "")
	awaitDraws(t, s, id, 1)
	res := skein(t, "", append([]string{"resume", id, "--guest-output"}, b.flags...)...)
	s.awaitStatus(t, id, "", "completed")
	final := w.finish(t)
	srv := serverBodies(t, s, id)
	if !strings.Contains(res.stderr, "is being executed by worker") || !strings.Contains(res.stderr, "waiting up to") {
		t.Errorf("skein resume did not say that it waits for the server's worker\n%s", res)
	}
	wantExit(t, res, exitFailed, "run "+id+" is completed", "is never resumed", "nothing executed")
	if got := serverEnded(s, id); !slices.Equal(got, []string{"completed"}) {
		t.Errorf("the server ended %s as %q; want completed, once", id, got)
	}
	checkDraws(t, "the server", srv, 1, n)
	checkBodiesOnce(t, 0, res)
	if !strings.HasPrefix(final["(run)"], "completed ") || len(final) != n+1 {
		t.Errorf("journal %q: want %d settled draws and the run completed", final, n)
	}
}

// awaitDraws waits until the server has recorded n draws of run id.
func awaitDraws(t *testing.T, s *skeinServer, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for drawsRecorded(s.outcomes(t, id, "")) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server recorded fewer than %d draws of %s in %v", n, id, runWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// drawsRecorded counts the settled draws of a run as the server answers.
func drawsRecorded(r runJSON) int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Function == "draw" && o.Status == "ok" {
			n++
		}
	}
	return n
}

// checkDrawnValues checks that the result printed by r lists, for each
// draw, the value its one body execution printed in r's or others'
// guest output.
func checkDrawnValues(t *testing.T, r result, others ...result) {
	t.Helper()
	var got []string
	if err := json.Unmarshal(decodeRun(t, r).Result, &got); err != nil {
		t.Fatalf("result: %v\n%s", err, r)
	}
	printed := map[int][]string{}
	for _, o := range append(others, r) {
		for i, vs := range bodies(o) {
			printed[i] = append(printed[i], vs...)
		}
	}
	for i, v := range got {
		if vs := printed[i+1]; len(vs) != 1 || vs[0] != v {
			t.Errorf("draw %d: recorded %s; its bodies printed %q", i+1, v, vs)
		}
	}
}

// TestRunKeepsStoredModuleName: `skein run FILE` of a module stored
// already under another name (deployed to a server on the same database,
// or run from another file) keeps that name: the second file's name does
// not rename it, so what a server's clients call it still resolves.
func TestRunKeepsStoredModuleName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, err := os.ReadFile(wasmbuild.Build(t, "./examples/sequence"))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "skein.db")
	for _, name := range []string{"orders", "copy"} {
		file := filepath.Join(dir, name+".wasm")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		wantExit(t, skein(t, dir, "run", file, "--db", db, "--input", `{"n": 2}`, "--id", "run-"+name), 0)
	}
	sdb, err := openRO(db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	var names []string
	rows, err := sdb.Query("SELECT name FROM module_names")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if len(names) != 1 || names[0] != "orders" {
		t.Errorf("stored module names %q; want one, \"orders\"", names)
	}
}
