package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// Runs that loop on host calls without yielding (ctx.Err(), Outcomes,
// StepContext.Now) hold every execution slot of a real `skein serve`:
// a cancellation through the API and a run timeout end them within
// host.CancelGrace, and a normal run started behind them completes.
func TestServeStopsBusyRuns(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/busy.db", nil, "--concurrency", "4", "--max-run-without-yield", "1m")
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, "./testdata/workflows/limits"), "--name", "limits"), 0)
	for _, wf := range []string{"pollerr", "pollout", "bodynow"} {
		want(t, "start "+wf, s.call(t, "POST", "/v1/runs", "", fmt.Sprintf(`{"module":"limits","workflow":%q,"id":"busy-%s"}`, wf, wf)), 201, "")
	}
	want(t, "start with a timeout", s.call(t, "POST", "/v1/runs", "", `{"module":"limits","workflow":"pollerr","id":"busy-timeout","timeout":"2s"}`), 201, "")
	for _, wf := range []string{"pollerr", "pollout", "bodynow"} {
		s.awaitStatus(t, "busy-"+wf, "", "running")
	}
	// Every slot is taken; a normal run waits for one.
	want(t, "start a normal run", s.call(t, "POST", "/v1/runs", "", `{"module":"limits","workflow":"opflood","input":3,"id":"normal"}`), 201, "")
	time.Sleep(300 * time.Millisecond)
	for _, wf := range []string{"pollerr", "pollout", "bodynow"} {
		id := "busy-" + wf
		start := time.Now()
		want(t, "cancel "+id, s.call(t, "POST", "/v1/runs/"+id+"/cancel", "", `{"reason":"operator said stop"}`), 200, "")
		run := s.awaitStatus(t, id, "", "canceled", "failed", "completed")
		if d := time.Since(start); run.Status != "canceled" || !strings.Contains(run.Error, "operator said stop") || d > host.CancelGrace+3*time.Second {
			t.Errorf("%s: %s %q %s after the cancel; want canceled within %s", id, run.Status, run.Error, d, host.CancelGrace)
		}
	}
	run := s.awaitStatus(t, "busy-timeout", "", "canceled", "failed", "completed")
	if run.Status != "canceled" || !strings.Contains(run.Error, "run timed out after 2s") {
		t.Errorf("busy-timeout: %s %q; want canceled by its timeout", run.Status, run.Error)
	}
	if run := s.awaitStatus(t, "normal", "", "completed", "failed", "canceled"); run.Status != "completed" || string(run.Result) != "3" {
		t.Errorf("normal run: %s %s %q", run.Status, run.Result, run.Error)
	}
	s.stop(t)
}

// Sixteen runs that never yield on a server with four slots: the no-yield
// limit ends each with its error, and a normal run still completes.
func TestServeBusyRunsHitTheLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/busy.db", nil, "--concurrency", "4", "--max-run-without-yield", "500ms")
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, "./testdata/workflows/limits"), "--name", "limits"), 0)
	wfs := []string{"pollerr", "pollout", "bodynow", "spin"}
	for i := range 16 {
		want(t, "start", s.call(t, "POST", "/v1/runs", "", fmt.Sprintf(`{"module":"limits","workflow":%q,"id":"b%d"}`, wfs[i%4], i)), 201, "")
	}
	want(t, "start a normal run", s.call(t, "POST", "/v1/runs", "", `{"module":"limits","workflow":"opflood","input":3,"id":"normal"}`), 201, "")
	for i := range 16 {
		run := s.awaitStatus(t, fmt.Sprintf("b%d", i), "", "failed", "completed", "canceled")
		if run.Status != "failed" || !strings.HasPrefix(run.Error, "workflow code ran 500ms without yielding to the host (limit Config.MaxRunWithoutYield = 500ms; --max-run-without-yield)") {
			t.Errorf("b%d (%s): %s %q", i, wfs[i%4], run.Status, run.Error)
		}
	}
	if run := s.awaitStatus(t, "normal", "", "completed", "failed", "canceled"); run.Status != "completed" {
		t.Errorf("normal run: %s %q", run.Status, run.Error)
	}
	s.stop(t)
}

// Run ids with characters outside the alphabet are refused with 400 and
// the rule, and no run is created; a child run's id is minted within it.
func TestServeRunIDAlphabet(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/ids.db", nil)
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, "./testdata/workflows/limits"), "--name", "limits"), 0)
	for _, id := range []string{"a\x00b", "bell\a", "rtl\u202eevil", "q?x", "h#x", "p%41", "a.b"} {
		body := map[string]any{"module": "limits", "workflow": "tree", "input": map[string]any{}, "id": id}
		r := s.call(t, "POST", "/v1/runs", "", body)
		want(t, "start "+fmt.Sprintf("%q", id), r, 400, "bad_request")
		if !strings.Contains(r.errMessage(), "letters, digits and - _ : @") {
			t.Errorf("id %q: message %q does not state the rule", id, r.errMessage())
		}
	}
	if list := s.call(t, "GET", "/v1/runs", "", nil); list.status != 200 || strings.Contains(string(list.body), `"id"`) {
		t.Errorf("runs after refused starts: %s", list)
	}
	want(t, "a good id", s.call(t, "POST", "/v1/runs", "", `{"module":"limits","workflow":"tree","input":{"Depth":2,"Fan":1,"Name":"`+strings.Repeat("n", 70)+`"},"id":"user_7:try@2"}`), 201, "")
	if run := s.awaitStatus(t, "user_7:try@2", "", "completed", "failed"); run.Status != "completed" || string(run.Result) != "3" {
		t.Errorf("tree with long names: %s %s %q", run.Status, run.Result, run.Error)
	}
	s.stop(t)
}
