package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/worker"
)

// The worker protocol under failure, through real processes: workers
// killed while they hold tasks, the server killed with tasks claimed and
// queued, two workers sharing the work, and bad requests.

// startRemote deploys testdata/workflows/remote as "remote" on s and
// starts one run of calls with input in per id, through the API.
func startRemote(t *testing.T, s *skeinServer, token string, in string, ids ...string) {
	t.Helper()
	wasm := wasmbuild.Build(t, remoteWorkflows)
	env := []string(nil)
	if token != "" {
		env = []string{"SKEIN_TOKEN=" + token}
	}
	wantExit(t, s.cli(t, env, "deploy", wasm, "--name", "remote"), 0)
	for _, id := range ids {
		r := s.call(t, "POST", "/v1/runs", token, map[string]any{"module": "remote", "id": id, "input": json.RawMessage(in)})
		want(t, "start "+id, r, 201, "")
	}
}

// attemptsByKey returns "run key" -> the attempts the workers started.
func attemptsByKey(ws ...*workerProc) map[string][]string {
	m := map[string][]string{}
	for _, w := range ws {
		for _, l := range w.lines("START ") {
			f := strings.Fields(l) // START name run key attempt
			m[f[2]+" "+f[3]] = append(m[f[2]+" "+f[3]], f[4])
		}
	}
	return m
}

// TestWorkerKilledTasksRetried SIGKILLs a worker that holds tasks: their
// leases expire, each attempt fails as timed out and is retried on a
// second worker, and the runs complete. The dead worker's completion,
// sent late, is refused with 409 and changes nothing.
func TestWorkerKilledTasksRetried(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "w.db"), nil, "--task-lease", "1s")
	ids := []string{"k-0", "k-1", "k-2"}
	startRemote(t, s, "", `{"n":2,"name":"slow","attempts":3}`, ids...)
	bin := buildTool(t, "./testdata/taskworker")
	a := startWorker(t, bin, "--server", s.url, "--id", "worker-a", "--delay", "1h")
	a.awaitLines(t, "START slow", len(ids)) // it holds the first call of each run
	a.kill()
	b := startWorker(t, bin, "--server", s.url, "--id", "worker-b", "--delay", "10ms")
	for _, id := range ids {
		run := s.awaitStatus(t, id, "", "completed", "failed")
		if run.Status != "completed" || string(run.Result) != "1" {
			t.Fatalf("run %s: %s %s %q; want completed with 1", id, run.Status, run.Result, run.Error)
		}
		outs := s.outcomes(t, id, "").Outcomes
		if len(outs) != 2 || outs[0].Key != "1" || outs[0].Attempts != 2 || outs[1].Attempts != 1 {
			t.Errorf("run %s outcomes %+v; want key 1 with 2 attempts (the first timed out), then 1 attempt", id, outs)
		}
	}
	got := attemptsByKey(b)
	for _, id := range ids {
		if k := id + " 1"; !slices.Equal(got[k], []string{"2"}) {
			t.Errorf("worker b started attempts %q of %s; want [2]", got[k], k)
		}
	}
	// The dead worker's attempt 1 comes back late: refused, nothing changes.
	before := s.outcomes(t, "k-0", "")
	r := s.call(t, "POST", "/v1/tasks/complete", "", map[string]any{"run_id": "k-0", "key": "1", "attempt": 1, "worker": "worker-a", "result": 99})
	want(t, "late completion", r, 409, "conflict")
	if !strings.Contains(r.errMessage(), "has ended already") {
		t.Errorf("late completion: %s; want it to say the task has ended", r)
	}
	r = s.call(t, "POST", "/v1/tasks/heartbeat", "", map[string]any{"run_id": "k-1", "key": "1", "attempt": 1, "worker": "worker-a"})
	want(t, "late heartbeat", r, 409, "conflict")
	if after := s.outcomes(t, "k-0", ""); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused completion changed the run: %+v, then %+v", before, after)
	}
}

// TestServeKilledWithTasks SIGKILLs skein serve while tasks are claimed
// and queued, and starts it again on the same database and address: the
// worker carries on, every run completes, and no outcome recorded before
// the kill changed.
func TestServeKilledWithTasks(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "a server killed while workers hold tasks (about 12 s)")
	db, addr := filepath.Join(t.TempDir(), "k.db"), freePort(t)
	s := startServer(t, db, nil, "--addr", addr, "--task-lease", "2s")
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = fmt.Sprintf("s-%02d", i)
	}
	startRemote(t, s, "", `{"n":3,"name":"slow","attempts":3}`, ids...)
	w := startWorker(t, buildTool(t, "./testdata/taskworker"), "--server", s.url, "--id", "w", "--delay", "150ms", "--concurrency", "4")
	w.awaitLines(t, "END slow", 10) // some calls are recorded, others claimed, the rest queued
	s.kill()
	before := map[string][]dbRow{}
	for _, id := range ids {
		before[id], _ = readRows(t, db, id)
	}
	s2 := startServer(t, db, nil, "--addr", addr, "--task-lease", "2s")
	for _, id := range ids {
		run := s2.awaitStatus(t, id, "", "completed", "failed")
		if run.Status != "completed" || string(run.Result) != "3" {
			t.Fatalf("run %s: %s %s %q; want completed with 3", id, run.Status, run.Result, run.Error)
		}
		after, _ := readRows(t, db, id)
		for _, b := range before[id] {
			i := slices.IndexFunc(after, func(a dbRow) bool { return a.Key == b.Key })
			if i < 0 || after[i].Status != b.Status || after[i].Value != b.Value || after[i].Function != b.Function {
				t.Errorf("run %s: outcome %s was %+v before the kill; after: %+v", id, b.Key, b, after)
			}
		}
	}
}

// TestTwoWorkersShareTasks runs 200 runs of 5 calls on two workers: each
// call executes once, both workers do part of the work, and every run
// gets the right result.
func TestTwoWorkersShareTasks(t *testing.T) {
	t.Parallel()
	testTwoWorkersShareTasks(t, startServer(t, filepath.Join(t.TempDir(), "two.db"), nil), 200, 0)
}

// TestTwoWorkersShareTasksPostgres is TestTwoWorkersShareTasks on two
// skein serve processes sharing a Postgres database, a worker on each:
// a task queued by a run on one server may be claimed through the other.
// Its calls take 20 ms ("slow"), so tasks wait in the queue while w1's
// slots are full: the first server hands a new task to its waiting
// claim at once, the second finds it only by polling the store, and
// with instant calls (echo) on a loaded machine w1 could take them all.
func TestTwoWorkersShareTasksPostgres(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	s := startServe(t, []string{"--store", dsn}, nil, "--worker-id", "serve-a")
	s2 := startServe(t, []string{"--store", dsn}, nil, "--worker-id", "serve-b")
	testTwoWorkersShareTasks(t, s, 60, 20*time.Millisecond, s2)
}

// testTwoWorkersShareTasks runs the calls of runs runs on a worker on s
// and one on the first of others (s itself if none); with delay > 0 the
// calls are the "slow" activity, taking delay each, else "echo".
func testTwoWorkersShareTasks(t *testing.T, s *skeinServer, runs int, delay time.Duration, others ...*skeinServer) {
	second := s
	if len(others) > 0 {
		second = others[0]
	}
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("t-%03d", i)
	}
	bin := buildTool(t, "./testdata/taskworker")
	name, slots := "echo", "8"
	if delay > 0 {
		name, slots = "slow", "4"
	}
	w1 := startWorker(t, bin, "--server", s.url, "--id", "w1", "--concurrency", slots, "--delay", delay.String())
	w2 := startWorker(t, bin, "--server", second.url, "--id", "w2", "--concurrency", slots, "--delay", delay.String())
	startRemote(t, s, "", `{"n":5,"name":"`+name+`"}`, ids...)
	for _, id := range ids {
		if run := s.awaitStatus(t, id, "", "completed", "failed"); run.Status != "completed" || string(run.Result) != "10" {
			t.Fatalf("run %s: %s %s %q; want completed with 10", id, run.Status, run.Result, run.Error)
		}
	}
	got := attemptsByKey(w1, w2)
	if len(got) != runs*5 {
		t.Errorf("the workers started %d distinct calls; want %d", len(got), runs*5)
	}
	for k, as := range got {
		if !slices.Equal(as, []string{"1"}) {
			t.Errorf("call %s: attempts started %q; want one, attempt 1", k, as)
		}
	}
	n1, n2 := len(w1.lines("START ")), len(w2.lines("START "))
	if n1 < runs/2 || n2 < runs/2 {
		t.Errorf("w1 ran %d calls, w2 %d; want both at least %d of %d", n1, n2, runs/2, runs*5)
	}
	t.Logf("w1 ran %d calls, w2 %d", n1, n2)
}

// TestWorkerProtocolErrors: a wrong token is 401, an unknown task 404, a
// malformed request 400; none of them changes the run.
func TestWorkerProtocolErrors(t *testing.T) {
	t.Parallel()
	const token = "s3cret"
	s := startServer(t, filepath.Join(t.TempDir(), "e.db"), []string{"SKEIN_TOKEN=" + token})
	startRemote(t, s, token, `{"n":1,"name":"echo"}`, "e-1")
	awaitTask := func() string {
		deadline := time.Now().Add(runWait)
		for {
			r := s.call(t, "GET", "/v1/runs/e-1/tasks", token, nil)
			if r.status == 200 && strings.Contains(string(r.body), `"state":"queued"`) {
				return string(r.body)
			}
			if time.Now().After(deadline) {
				t.Fatalf("no queued task after %v: %s", runWait, r)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	tasks := awaitTask()
	if _, _, m := scrape(t, s, token); !strings.Contains(m, `skein_task_queue{name="echo",namespace="default",state="queued"} 1`+"\n") {
		t.Errorf("/metrics does not count the queued task:\n%s", m)
	}

	w := startWorker(t, buildTool(t, "./testdata/taskworker"), "--server", s.url, "--token", "wrong")
	select {
	case <-w.exited:
	case <-time.After(runWait):
		t.Fatal("a worker with a wrong token still runs")
	}
	if e := w.stderr.String(); !strings.Contains(e, "401") {
		t.Errorf("worker with a wrong token: stderr %q; want the 401", e)
	}
	ref := map[string]any{"run_id": "e-1", "key": "1", "attempt": 1, "worker": "x"}
	for _, c := range []struct {
		what, path, token string
		body              any
		status            int
		code, says        string
	}{
		{"claim without token", "/v1/tasks/claim", "", map[string]any{"worker": "x", "names": []string{"echo"}, "max": 1}, 401, "unauthorized", ""},
		{"complete with a wrong token", "/v1/tasks/complete", "nope", map[string]any{"run_id": "e-1", "key": "1", "attempt": 1, "worker": "x", "result": 1}, 401, "unauthorized", ""},
		{"complete unknown task", "/v1/tasks/complete", token, map[string]any{"run_id": "e-1", "key": "7", "attempt": 1, "worker": "x", "result": 1}, 404, "not_found", `no activity task at key "7"`},
		{"complete unknown run", "/v1/tasks/complete", token, map[string]any{"run_id": "nope", "key": "1", "attempt": 1, "worker": "x", "result": 1}, 404, "not_found", ""},
		{"complete unclaimed task", "/v1/tasks/complete", token, map[string]any{"run_id": "e-1", "key": "1", "attempt": 1, "worker": "x", "result": 1}, 409, "conflict", "is not claimed"},
		{"complete malformed JSON", "/v1/tasks/complete", token, `{"run_id": "e-1", `, 400, "bad_request", ""},
		{"complete without result", "/v1/tasks/complete", token, ref, 400, "bad_request", `"result" is needed`},
		{"complete unknown field", "/v1/tasks/complete", token, `{"run_id":"e-1","key":"1","attempt":1,"worker":"x","result":1,"extra":2}`, 400, "bad_request", "extra"},
		{"complete attempt 0", "/v1/tasks/complete", token, map[string]any{"run_id": "e-1", "key": "1", "attempt": 0, "worker": "x", "result": 1}, 400, "bad_request", "attempt"},
		{"fail without error", "/v1/tasks/fail", token, ref, 400, "bad_request", `"error" must be a non-empty string`},
		{"heartbeat unknown task", "/v1/tasks/heartbeat", token, map[string]any{"run_id": "e-1", "key": "9", "attempt": 1, "worker": "x"}, 404, "not_found", ""},
		{"heartbeat bad progress", "/v1/tasks/heartbeat", token, `{"run_id":"e-1","key":"1","attempt":1,"worker":"x","progress":nope}`, 400, "bad_request", ""},
		{"claim max 0", "/v1/tasks/claim", token, map[string]any{"worker": "x", "names": []string{"echo"}, "max": 0}, 400, "bad_request", "1 to 256"},
		{"claim no names", "/v1/tasks/claim", token, map[string]any{"worker": "x", "max": 1}, 400, "bad_request", "1 to 1000 activities"},
		{"claim no worker", "/v1/tasks/claim", token, map[string]any{"names": []string{"echo"}, "max": 1}, 400, "bad_request", "identity"},
		{"claim negative wait", "/v1/tasks/claim", token, map[string]any{"worker": "x", "names": []string{"echo"}, "max": 1, "wait_ms": -1}, 400, "bad_request", "wait_ms"},
	} {
		r := s.call(t, "POST", c.path, c.token, c.body)
		want(t, c.what, r, c.status, c.code)
		if c.says != "" && !strings.Contains(r.errMessage(), c.says) {
			t.Errorf("%s: %s; want the message to say %q", c.what, r, c.says)
		}
	}
	if after := awaitTask(); after != tasks {
		t.Errorf("bad requests changed the run's tasks:\n%s\nthen\n%s", tasks, after)
	}
	if run := s.getRun(t, "e-1", token); run.Status == "completed" || run.Status == "failed" {
		t.Errorf("run e-1 is %s after bad requests; want it still waiting", run.Status)
	}
	// A real worker then serves it.
	startWorker(t, buildTool(t, "./testdata/taskworker"), "--server", s.url, "--token", token)
	if run := s.awaitStatus(t, "e-1", token, "completed", "failed"); run.Status != "completed" || string(run.Result) != "0" {
		t.Errorf("run e-1: %s %s %q; want completed with 0", run.Status, run.Result, run.Error)
	}
}

// TestRemoteRetriesAndCancel: a failing remote call is retried by its
// policy and then fails the run with the worker's error; a non-retryable
// one fails at once; canceling a run cancels the task its worker runs
// (the activity's context ends) and the worker's later report is refused.
func TestRemoteRetriesAndCancel(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "remote retries with backoff, then a cancel (about 11 s)")
	s := startServer(t, filepath.Join(t.TempDir(), "r.db"), nil)
	startRemote(t, s, "", `{"n":1,"name":"fail","attempts":3}`, "f-1")
	w := startWorker(t, buildTool(t, "./testdata/taskworker"), "--server", s.url, "--id", "w", "--delay", "1h")
	run := s.awaitStatus(t, "f-1", "", "completed", "failed")
	if run.Status != "failed" || !strings.Contains(run.Error, "fail: it always fails") {
		t.Errorf("run f-1: %s %q; want failed with the worker's error", run.Status, run.Error)
	}
	if outs := s.outcomes(t, "f-1", "").Outcomes; len(outs) != 1 || outs[0].Attempts != 3 || outs[0].Status != "error" {
		t.Errorf("run f-1 outcomes %+v; want one error after 3 attempts", outs)
	}
	if got := attemptsByKey(w)["f-1 1"]; !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Errorf("the worker started attempts %q; want 1, 2, 3", got)
	}

	r := s.call(t, "POST", "/v1/runs", "", map[string]any{"module": "remote", "id": "n-1", "input": json.RawMessage(`{"n":1,"name":"refuse","attempts":3}`)})
	want(t, "start n-1", r, 201, "")
	run = s.awaitStatus(t, "n-1", "", "completed", "failed")
	if outs := s.outcomes(t, "n-1", "").Outcomes; run.Status != "failed" || len(outs) != 1 || outs[0].Attempts != 1 {
		t.Errorf("run n-1: %s %q, outcomes %+v; want failed after 1 attempt (non-retryable)", run.Status, run.Error, outs)
	}

	r = s.call(t, "POST", "/v1/runs", "", map[string]any{"module": "remote", "id": "c-1", "input": json.RawMessage(`{"n":1,"name":"slow"}`)})
	want(t, "start c-1", r, 201, "")
	w.awaitLines(t, "START slow c-1", 1)
	wantExit(t, s.cli(t, nil, "status", "c-1"), 0, "activity slow (key 1): attempt 1, held by worker w since")
	wantExit(t, s.cli(t, nil, "cancel", "c-1", "--reason", "changed my mind"), 0)
	w.awaitLines(t, "END slow c-1", 1) // the activity's context ended
	run = s.awaitStatus(t, "c-1", "", "canceled", "failed", "completed")
	if run.Status != "canceled" {
		t.Errorf("run c-1 is %s (%q); want canceled", run.Status, run.Error)
	}
	tl := s.call(t, "GET", "/v1/runs/c-1/tasks", "", nil)
	if !strings.Contains(string(tl.body), `"state":"canceled"`) || !strings.Contains(string(tl.body), "changed my mind") {
		t.Errorf("tasks of c-1: %s; want the task canceled with the reason", tl)
	}
	r = s.call(t, "POST", "/v1/tasks/complete", "", map[string]any{"run_id": "c-1", "key": "1", "attempt": 1, "worker": "w", "result": 1})
	want(t, "completion of a canceled task", r, 409, "conflict")
}

// TestWorkerStopReleasesTasks stops a worker (SIGTERM) while it holds a
// task: it cancels the activity, reports the attempt as stopped, and the
// next attempt runs on another worker at once, long before the lease
// (one minute) would have expired.
func TestWorkerStopReleasesTasks(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "stop.db"), nil, "--task-lease", "1m")
	startRemote(t, s, "", `{"n":1,"name":"slow","attempts":3}`, "st-1")
	bin := buildTool(t, "./testdata/taskworker")
	a := startWorker(t, bin, "--server", s.url, "--id", "a", "--delay", "1h")
	a.awaitLines(t, "START slow st-1", 1)
	stopped := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.exited:
	case <-time.After(runWait):
		t.Fatal("the worker did not exit after SIGTERM")
	}
	if !slices.Equal(a.lines("END slow st-1"), []string{"END slow st-1 1 1"}) {
		t.Errorf("worker a's activity did not end on SIGTERM: %q", a.lines(""))
	}
	startWorker(t, bin, "--server", s.url, "--id", "b", "--delay", "1ms")
	run := s.awaitStatus(t, "st-1", "", "completed", "failed")
	if run.Status != "completed" || time.Since(stopped) > 30*time.Second {
		t.Errorf("run st-1: %s %q after %v; want completed well within the one-minute lease", run.Status, run.Error, time.Since(stopped))
	}
	tl := s.call(t, "GET", "/v1/runs/st-1/tasks", "", nil)
	if !strings.Contains(string(tl.body), `"attempt":2`) || !strings.Contains(string(tl.body), worker.ErrStopping.Error()) {
		t.Errorf("tasks of st-1: %s; want attempt 2 after attempt 1 failed with %q", tl, worker.ErrStopping)
	}
}
