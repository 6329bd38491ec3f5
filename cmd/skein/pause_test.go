package main

// End-to-end tests of pausing runs (docs/operations.md, "Pausing runs")
// through real `skein serve` processes: skein pause, unpause and resume
// --server, and the API's errors.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/guestbuild"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// pauseWorkflows is the package of the pause tests' workflows, in two
// versions.
const pauseWorkflows = "./testdata/workflows/pause/"

// deployPause deploys version v of the pause module under name and
// returns its hash.
func deployPause(t *testing.T, s *skeinServer, v, name string) string {
	t.Helper()
	r := s.cli(t, nil, "deploy", wasmbuild.Build(t, pauseWorkflows+v), "--name", name, "--json")
	wantExit(t, r, 0)
	return decodeJSON[apiModule](t, "deploy --json", []byte(r.stdout)).Hash
}

// TestServePauseHoldsSuspendedRun: a suspended run paused with skein
// pause is not executed while its timer falls due and its promise is
// settled (its outcomes stay as they were); status shows who paused it
// and why; once unpaused it completes with both delivered.
func TestServePauseHoldsSuspendedRun(t *testing.T) {
	t.Parallel()
	testPauseHolds(t, startServer(t, t.TempDir()+"/pause.db", nil, "--poll", "50ms"))
}

// TestServePausePostgres is TestServePauseHoldsSuspendedRun on Postgres.
func TestServePausePostgres(t *testing.T) {
	t.Parallel()
	testPauseHolds(t, startPostgresServer(t, postgresSchema(t)))
}

func testPauseHolds(t *testing.T, s *skeinServer) {
	deployPause(t, s, "v1", "pz")
	const timer = 600 * time.Millisecond
	start := time.Now()
	wantExit(t, s.cli(t, nil, "start", "pz", "--workflow", "hold", "--input", fmt.Sprintf(`{"ms":%d}`, timer.Milliseconds()), "--id", "hold-1"), 0)
	s.awaitStatus(t, "hold-1", "", "suspended")
	wantExit(t, s.cli(t, nil, "pause", "hold-1", "--reason", "checking the approval"), 0,
		"run hold-1: paused (suspended)", "paused by api since ", ": checking the approval")
	before := s.outcomes(t, "hold-1", "")
	wantExit(t, s.cli(t, nil, "resolve", "hold-1.approve", "--value", `"yes"`), 0)
	time.Sleep(time.Until(start.Add(timer + 500*time.Millisecond))) // the timer is due, the workers poll every 50ms
	run := s.getRun(t, "hold-1", "")
	if run.Status != "suspended" || run.Paused == nil || run.Paused.By != "api" || run.Paused.Reason != "checking the approval" ||
		time.Since(run.Paused.Since) > time.Minute || run.Worker != "" {
		t.Fatalf("paused run with its timer due and its promise settled: %+v; want it suspended, paused by api, held by no worker", run)
	}
	after := s.outcomes(t, "hold-1", "")
	if b, a := fmt.Sprint(before.Outcomes), fmt.Sprint(after.Outcomes); a != b || after.Paused == nil {
		t.Errorf("outcomes changed while paused:\nbefore %s\nafter  %s (paused %+v)", b, a, after.Paused)
	}
	wantExit(t, s.cli(t, nil, "status", "hold-1"), 0, "hold-1 (hold): suspended", "paused by api since ", ": checking the approval")
	wantExit(t, s.cli(t, nil, "unpause", "hold-1"), 0, "run hold-1: unpaused")
	done := s.awaitStatus(t, "hold-1", "", "completed", "failed")
	if done.Paused != nil || !jsonEq(t, done.Result, fmt.Sprintf(`"v1: slept %dms, approved yes"`, timer.Milliseconds())) {
		t.Errorf("after unpause: %+v; want completed with the timer and the approval", done)
	}
	s.stop(t)
}

// TestServePauseMidExecution: a run in a long loop of steps, paused
// through the API, stops within the cancel grace and releases its lease,
// recording nothing more; unpaused, it goes on from its journal and
// completes with every step counted once.
func TestServePauseMidExecution(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/mid.db", nil, "--poll", "50ms")
	deployServerModule(t, s, nil)
	const n = 30
	want(t, "start chain", s.call(t, "POST", "/v1/runs", "", fmt.Sprintf(`{"module":"srv","workflow":"chain","input":{"n":%d,"ms":40},"id":"loop-1"}`, n)), 201, "")
	s.awaitOutcome(t, "loop-1", "3")
	paused := time.Now()
	r := s.call(t, "POST", "/v1/runs/loop-1/pause", "", `{"reason":"hold on"}`)
	want(t, "pause loop-1", r, 200, "")
	if run := decodeJSON[apiRun](t, "pause", r.body); run.Paused == nil || run.Paused.Reason != "hold on" {
		t.Errorf("pause answered %s; want the run with its pause", r)
	}
	var run apiRun
	for run = s.getRun(t, "loop-1", ""); run.Worker != "" && time.Since(paused) < runWait; run = s.getRun(t, "loop-1", "") {
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(paused); run.Worker != "" || took > host.CancelGrace+2*time.Second {
		t.Fatalf("the paused run's execution stopped after %s (worker %q); want within %s", took, run.Worker, host.CancelGrace)
	}
	if run.Status != "running" || run.Paused == nil {
		t.Errorf("stopped run: %+v; want running (as it was), paused", run)
	}
	held := len(s.outcomes(t, "loop-1", "").Outcomes)
	time.Sleep(300 * time.Millisecond)
	if now := len(s.outcomes(t, "loop-1", "").Outcomes); now != held || held >= n {
		t.Errorf("paused run recorded %d outcomes, then %d; want no change, before the end (%d)", held, now, n)
	}
	if !strings.Contains(s.stderr.String(), "run paused: its execution stopped") {
		t.Errorf("the server's log does not say the execution stopped:\n%s", s.stderr.String())
	}
	want(t, "unpause loop-1", s.call(t, "POST", "/v1/runs/loop-1/unpause", "", nil), 200, "")
	if done := s.awaitStatus(t, "loop-1", "", "completed", "failed"); !jsonEq(t, done.Result, fmt.Sprint(n*(n+1)/2)) {
		t.Errorf("after unpause: %+v; want completed with %d", done, n*(n+1)/2)
	}
	s.stop(t)
}

// TestServeResumeOnModule: skein resume --server points a paused run at
// another deployed module (by name), unpauses it, and the server's
// workers replay it there: it completes with the new code's result. Bad
// requests get clear errors.
func TestServeResumeOnModule(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/resume.db", nil, "--poll", "50ms")
	deployPause(t, s, "v1", "pz")
	v2 := deployPause(t, s, "v2", "pz-fixed")
	wantExit(t, s.cli(t, nil, "start", "pz", "--workflow", "hold", "--input", `{"ms":50}`, "--id", "hold-2"), 0)
	s.awaitStatus(t, "hold-2", "", "suspended")
	wantExit(t, s.cli(t, nil, "pause", "hold-2"), 0)
	wantExit(t, s.cli(t, nil, "resolve", "hold-2.approve", "--value", `"ok"`), 0)
	wantExit(t, s.cli(t, nil, "resume", "hold-2", "--module", "pz-fixed"), 0, "run hold-2: resumed on module "+v2)
	done := s.awaitStatus(t, "hold-2", "", "completed", "failed")
	if done.Module != v2 || done.Paused != nil || !jsonEq(t, done.Result, `"v2: slept 50ms, approved ok"`) {
		t.Errorf("resumed run: %+v; want completed on %s by the new code", done, v2)
	}

	// Bad input: an ended run, an unknown run, an unknown module.
	r := s.call(t, "POST", "/v1/runs/hold-2/pause", "", `{"reason":"late"}`)
	want(t, "pause an ended run", r, 409, "conflict")
	if m := r.errMessage(); m != `run "hold-2" has ended (completed); it cannot be paused` {
		t.Errorf("pause of an ended run: %q", m)
	}
	want(t, "resume an ended run", s.call(t, "POST", "/v1/runs/hold-2/resume", "", `{"module":"pz"}`), 409, "conflict")
	for _, p := range []string{"pause", "unpause", "resume"} {
		r := s.call(t, "POST", "/v1/runs/ghost/"+p, "", nil)
		if want(t, p+" an unknown run", r, 404, "not_found"); r.errMessage() != `no run "ghost"` {
			t.Errorf("%s of an unknown run: %q", p, r.errMessage())
		}
	}
	wantExit(t, s.cli(t, nil, "pause", "ghost"), exitFailed, `no run "ghost"`)
	wantExit(t, s.cli(t, nil, "start", "pz", "--workflow", "hold", "--input", `{"ms":50}`, "--id", "hold-3"), 0)
	r = s.call(t, "POST", "/v1/runs/hold-3/resume", "", `{"module":"nope"}`)
	if want(t, "resume on an unknown module", r, 404, "not_found"); r.errMessage() != `no module "nope"` {
		t.Errorf("resume on an unknown module: %q", r.errMessage())
	}
	want(t, "pause with a bad body", s.call(t, "POST", "/v1/runs/hold-3/pause", "", `{"why":"x"}`), 400, "bad_request")
	s.stop(t)
}

// awaitPaused polls the run until it is paused with a reason containing
// reason, and fails the test after runWait.
func (s *skeinServer) awaitPaused(t *testing.T, id, reason string) apiRun {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for {
		run := s.getRun(t, id, "")
		if run.Paused != nil && strings.Contains(run.Paused.Reason, reason) {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s, paused %+v after %v; want paused with %q", id, run.Status, run.Paused, runWait, reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeRetryPolicyPauses: a step under RetryPolicy{OnExhausted:
// skein.Pause} whose attempts all fail pauses the run, by "retry policy"
// with a reason naming the step and its last error, the step pending
// with its attempts; unpaused, it gets a fresh round of attempts (and
// pauses again on the same code); resumed on fixed code, it completes.
func TestServeRetryPolicyPauses(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/retry.db", nil, "--poll", "50ms")
	deployPause(t, s, "v1", "pz")
	v2 := deployPause(t, s, "v2", "pz-fixed")
	wantExit(t, s.cli(t, nil, "start", "pz", "--workflow", "flaky", "--input", "{}", "--id", "flaky-1"), 0)
	run := s.awaitPaused(t, "flaky-1", `step "charge" (key 1) ran out of retries after 2 attempts; last error: card declined (v1)`)
	if run.Paused.By != "retry policy" || run.Status == "failed" {
		t.Errorf("paused by its retry policy: %+v; want by \"retry policy\", not failed", run)
	}
	charge := func() outcomeJSON {
		t.Helper()
		v := s.outcomes(t, "flaky-1", "")
		for _, o := range v.Outcomes {
			if o.Key == "1" {
				return o
			}
		}
		t.Fatalf("flaky-1 has no outcome at key 1: %+v", v.Outcomes)
		return outcomeJSON{}
	}
	if o := charge(); o.Status != "pending" || o.Attempts != 2 {
		t.Errorf("the exhausted step: %+v; want pending after 2 attempts", o)
	}
	wantExit(t, s.cli(t, nil, "status", "flaky-1"), 0, "paused by retry policy since ", "card declined (v1)")
	wantExit(t, s.cli(t, nil, "unpause", "flaky-1"), 0)
	s.awaitPaused(t, "flaky-1", "after 4 attempts; last error: card declined (v1)")
	wantExit(t, s.cli(t, nil, "resume", "flaky-1", "--module", v2), 0, "resumed on module "+v2)
	done := s.awaitStatus(t, "flaky-1", "", "completed", "failed")
	if !jsonEq(t, done.Result, `"charged (v2)"`) || done.Paused != nil {
		t.Errorf("resumed on fixed code: %+v; want completed, charged by v2", done)
	}
	if o := charge(); o.Status != "ok" || o.Attempts != 5 {
		t.Errorf("the step after the fix: %+v; want ok on attempt 5", o)
	}
	s.stop(t)
}

// TestServeRetryPolicyPausesRust: the Rust SDK's Retry { on_exhausted:
// Exhausted::Pause } pauses the run when a step's retries run out, and
// an unpause gives it a fresh round; resumed on a fixed module (the Go
// one, with the same workflow and step), it completes.
func TestServeRetryPolicyPausesRust(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/rust.db", nil, "--poll", "50ms")
	wantExit(t, s.cli(t, nil, "deploy", guestbuild.Rust(t, "testdata/rust/pause"), "--name", "pz-rust"), 0)
	v2 := deployPause(t, s, "v2", "pz-fixed")
	wantExit(t, s.cli(t, nil, "start", "pz-rust", "--workflow", "flaky", "--input", `""`, "--id", "rust-1"), 0)
	run := s.awaitPaused(t, "rust-1", `step "charge" (key 1) ran out of retries after 2 attempts; last error: card declined (rust)`)
	if run.Paused.By != "retry policy" {
		t.Errorf("paused by %q; want \"retry policy\"", run.Paused.By)
	}
	wantExit(t, s.cli(t, nil, "unpause", "rust-1"), 0)
	s.awaitPaused(t, "rust-1", "after 4 attempts; last error: card declined (rust)")
	wantExit(t, s.cli(t, nil, "resume", "rust-1", "--module", "pz-fixed"), 0)
	if done := s.awaitStatus(t, "rust-1", "", "completed", "failed"); done.Module != v2 || !jsonEq(t, done.Result, `"charged (v2)"`) {
		t.Errorf("resumed on the fixed module: %+v; want completed by v2", done)
	}
	s.stop(t)
}
