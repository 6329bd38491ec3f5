package main

// The messages a newcomer meets first (issue 21, item 6): each asserted
// through the real skein binary and, where a server answers, a real
// `skein serve`.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// A file or an upload that is not WebAssembly says how to build a module.
func TestMessageNotWasm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := "GOOS=wasip1 GOARCH=wasm go build -o"
	wantExit(t, skein(t, dir, "run", "main.go"), 1, "not a WebAssembly module", build)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	r := s.cli(t, nil, "deploy", src)
	wantExit(t, r, 1, "not a WebAssembly module", build, "HTTP 400")
}

// Starting a module the server does not have names `skein deploy`.
func TestMessageUnknownModule(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	r := s.cli(t, nil, "start", "approvals", "--workflow", "approval")
	wantExit(t, r, 1, `no module "approvals"`, "skein deploy MODULE.wasm --name approvals", "HTTP 404")
}

// Malformed JSON in --input (and --value) says where: line and column.
func TestMessageInputPosition(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./examples/sequence")
	bad := "{\"n\": 5,\n \"m\": }"
	for _, args := range [][]string{
		{"run", wasm, "--input", bad},
		{"start", "seq", "--input", bad},
		{"check", wasm, "--input", bad},
		{"resolve", "r.k", "--value", bad},
	} {
		t.Run(args[0], func(t *testing.T) {
			r := skeinEnv(t, []string{"SKEIN_SERVER=http://127.0.0.1:1"}, args...)
			wantExit(t, r, 2, "is not valid JSON", "line 2, column 7", "invalid character '}'")
		})
	}
}

// `skein inspect` in a folder without a database says to pass --db or
// --server, and does not create a database.
func TestMessageInspectNoDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := skein(t, dir, "inspect", "r1")
	wantExit(t, r, 1, "no database skein.db in this folder", "--db FILE", "--server URL")
	if strings.Contains(r.stderr, "stat skein.db") {
		t.Errorf("the message is the bare stat error:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "skein.db")); err == nil {
		t.Errorf("inspect created skein.db")
	}
}

// An unknown flag prints one line and the command's usage hint, not every
// flag; --help still prints them all.
func TestMessageUnknownFlag(t *testing.T) {
	t.Parallel()
	r := skein(t, "", "run", "x.wasm", "--bogus")
	wantExit(t, r, 2, "flag provided but not defined: -bogus", "usage: skein run MODULE.wasm", "skein run --help")
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n") + 1; n > 3 || strings.Contains(r.stderr, "-lease-wait") {
		t.Errorf("an unknown flag printed %d lines (the whole usage?):\n%s", n, r)
	}
	r = skein(t, "", "run", "--help")
	wantExit(t, r, 0, "-lease-wait", "-input")
}

// Running a failed run's id again with another input says that the id is
// spent and how to start a new run; the same request prints the stored
// run as before. The server says the same at start.
func TestMessageSpentRunID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := wasmbuild.Build(t, "./examples/refund/v1")
	r := skein(t, dir, "run", wasm, "--input", `{"amount": 0}`, "--id", "spent")
	wantExit(t, r, 1, "amount 0: want more than 0")
	r = skein(t, dir, "run", wasm, "--input", `{"amount": 40}`, "--id", "spent")
	wantExit(t, r, 1, "run spent ended failed with another input", "a run id names one run", "--id", "skein resume spent")
	r = skein(t, dir, "run", wasm, "--input", `{"amount":0}`, "--id", "spent")
	wantExit(t, r, 1, "was already failed: printing the stored run")

	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	wantExit(t, s.cli(t, nil, "deploy", wasm, "--name", "refund"), 0)
	wantExit(t, s.cli(t, nil, "start", "refund", "--input", `{"amount": 1}`, "--id", "s1"), 0)
	r = s.cli(t, nil, "start", "refund", "--input", `{"amount": 2}`, "--id", "s1")
	wantExit(t, r, 1, `run "s1" exists with a different input`, "a run id names one run", "another id", "HTTP 409")
}

// Settling a promise again with the same value succeeds (already
// settled), before and after the run received it; another value is 409.
func TestMessageResolveIdempotent(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--id", "w1"), 0)
	wantExit(t, s.cli(t, nil, "wait", "w1", "--issued", "approve"), 0)
	wantExit(t, s.cli(t, nil, "resolve", "w1.approve", "--value", `"yes"`), 0, "promise w1.approve settled (ok)")
	wantExit(t, s.cli(t, nil, "resolve", "w1.approve", "--value", ` "yes" `), 0, "already settled")
	wantExit(t, s.cli(t, nil, "wait", "w1"), 0, "approved: yes")
	r := s.call(t, "POST", "/v1/promises/w1.approve", "", map[string]any{"value": "yes"})
	if r.status != 200 || !strings.Contains(string(r.body), `"already_settled":true`) {
		t.Errorf("the same value again after the run completed: %s, want 200 with already_settled", r)
	}
	r = s.call(t, "POST", "/v1/promises/w1.approve", "", map[string]any{"value": "no"})
	want(t, "another value", r, 409, "conflict")
	if !strings.Contains(r.errMessage(), "settled already with another") {
		t.Errorf("another value: %q, want it to say the promise holds another outcome", r.errMessage())
	}
	wantExit(t, s.cli(t, nil, "resolve", "w1.approve", "--error", "no"), 1, "HTTP 409")
}
