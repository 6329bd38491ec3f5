package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestWaitingOnLocal: a `skein run` that ends suspended says what it
// waits on (the promise's full id and the skein resolve line) and how to
// go on; `skein inspect` shows the same, and --json carries it.
func TestWaitingOnLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := wasmbuild.Build(t, "./examples/refund/v1")
	r := skein(t, dir, "run", wasm, "--input", `{"amount": 5}`, "--id", "w1")
	wantExit(t, r, 0, "run w1 (refund): suspended", "waiting on:", "promise w1.approve: settle it with",
		"skein resolve w1.approve --value 'JSON'", "run w1 is suspended", "skein serve --db skein.db", "skein resume w1")
	r = skein(t, dir, "inspect", "w1")
	wantExit(t, r, 0, "waiting on:", "skein resolve w1.approve --value 'JSON'")
	v := decodeRun(t, skein(t, dir, "inspect", "w1", "--json"))
	var w struct {
		Promises []struct{ ID, Key, Resolve string }
	}
	if err := json.Unmarshal(v.Waiting, &w); err != nil || len(w.Promises) != 1 || w.Promises[0].ID != "w1.approve" ||
		w.Promises[0].Resolve != "skein resolve w1.approve --value 'JSON'" {
		t.Errorf("inspect --json waiting %s (%v)", v.Waiting, err)
	}
	// A completed run waits on nothing, although v2 left v1's promise.
	r = skein(t, dir, "resume", "w1", "--module", wasmbuild.Build(t, "./examples/refund/v2"))
	wantExit(t, r, 0, "completed")
	if strings.Contains(r.stdout, "waiting on") {
		t.Errorf("a completed run lists what it waits on:\n%s", r)
	}
}

// TestWaitingOnServer: `skein status` and `skein inspect` of a run on a
// server list its pending promise with the resolve line and its timer
// with the due time; a parent lists its child run, and a run in a long
// step lists the step.
func TestWaitingOnServer(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, "./examples/approval"), "--name", "approvals"), 0)
	wantExit(t, s.cli(t, nil, "start", "approvals", "--input", `{"request":"desk","timeout":"2h"}`, "--id", "a1"), 0)
	wantExit(t, s.cli(t, nil, "wait", "a1", "--issued", "deadline"), 0)
	s.awaitStatus(t, "a1", "", "suspended")
	for _, cmd := range []string{"status", "inspect"} {
		r := s.cli(t, nil, cmd, "a1")
		wantExit(t, r, 0, "waiting on:", "promise a1.decision: settle it with", "skein resolve a1.decision --value 'JSON'", "timer deadline: due ")
		i := strings.Index(r.stdout, "timer deadline: due ")
		due, err := time.Parse(time.RFC3339, strings.Fields(r.stdout[i+len("timer deadline: due "):])[0])
		if err != nil || due.Before(time.Now().Add(time.Hour+50*time.Minute)) || due.After(time.Now().Add(2*time.Hour)) {
			t.Errorf("%s: the deadline is due %v (%v), want about 2h from now\n%s", cmd, due, err, r)
		}
	}
	wantExit(t, s.cli(t, nil, "resolve", "a1.decision", "--value", `{"approved":true,"by":"ana"}`), 0)
	wantExit(t, s.cli(t, nil, "wait", "a1"), 0)
	if r := s.cli(t, nil, "status", "a1"); strings.Contains(r.stdout, "waiting on") {
		t.Errorf("a completed run lists what it waits on:\n%s", r)
	}

	// A step whose first attempt failed, while its second one runs.
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, "./testdata/workflows/features"), "--name", "feat"), 0)
	wantExit(t, s.cli(t, nil, "start", "feat", "--workflow", "retrystep", "--input", `{"fail":1,"max":3,"sleep_ms":3000,"error":"flaky"}`, "--id", "b1"), 0)
	wantExit(t, s.cli(t, nil, "wait", "b1", "--issued", "1"), 0)
	wantExit(t, s.cli(t, nil, "status", "b1"), 0, "waiting on:", "step flaky (key 1): 2 attempts so far")
	wantExit(t, s.cli(t, nil, "start", "feat", "--workflow", "parent", "--input", `{"child":"waiter"}`, "--id", "p1"), 0)
	wantExit(t, s.cli(t, nil, "wait", "p1", "--issued", "1"), 0)
	s.awaitStatus(t, "p1", "", "suspended")
	wantExit(t, s.cli(t, nil, "status", "p1"), 0, "waiting on:", "child run p1", "(workflow waiter): skein status p1")
}
