package main

// End-to-end tests of where a webhook's secret may come from, through
// real `skein serve` processes: only SKEIN_HOOK_* variables of the
// server's environment, or a secrets file (--hook-secrets) read at the
// start and on SIGHUP; a hook stored with another variable has its
// deliveries refused, and the server says so when it starts.

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHookSecretEnvRule: a client cannot make the server check
// signatures with any of its environment variables (and so confirm
// guesses of their values): a variable not named SKEIN_HOOK_* is refused
// with 400 naming the rule. A hook stored before the rule, reading such a
// variable, gets a warning at the start and 503 for its deliveries,
// telling the operator to create it anew.
func TestHookSecretEnvRule(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	env := []string{"AWS_SECRET_ACCESS_KEY=guess-me"}
	s := startServer(t, db, env, "--poll", "50ms")
	deployServerModule(t, s, nil)
	for _, v := range []string{"AWS_SECRET_ACCESS_KEY", "PATH", "SKEIN_HOOK_"} {
		wantExit(t, s.cli(t, nil, "hook", "create", "probe", "--module", "srv", "--workflow", "echo", "--secret-env", v), 1,
			"HTTP 400", "secret variable $"+v+": a hook's secret variable must be named SKEIN_HOOK_NAME")
	}
	if r := deliver(t, s, "probe", "", []byte(`{}`), "X-Hub-Signature-256", sign("guess-me", []byte(`{}`))); r.status != 404 {
		t.Errorf("a delivery to the refused hook: %s; want 404 (no such hook)", r)
	}

	// A hook stored by an older server, reading $AWS_SECRET_ACCESS_KEY.
	s.stop(t)
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO hooks (name, doc, created_at) VALUES ('old', ?, 1)`,
		`{"name":"old","module":"srv","workflow":"echo","secret_env":"AWS_SECRET_ACCESS_KEY"}`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	s = startServer(t, db, env, "--poll", "50ms")
	body := []byte(`{"n":1}`)
	r := deliver(t, s, "old", "", body, "X-Hub-Signature-256", sign("guess-me", body))
	if r.status != 503 || !strings.Contains(r.errMessage(), "$AWS_SECRET_ACCESS_KEY is not a SKEIN_HOOK_* variable, the only ones a hook may read: delete the hook and create it again") {
		t.Errorf("a delivery to a hook stored with $AWS_SECRET_ACCESS_KEY: %s; want 503 telling to create the hook anew", r)
	}
	for end := time.Now().Add(5 * time.Second); !strings.Contains(s.stderr.String(), "hooks: the deliveries of this hook are refused (503)") && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if log := s.stderr.String(); countLines(log, "level=WARN", "hooks: the deliveries of this hook are refused (503)", "hook=old", "AWS_SECRET_ACCESS_KEY") != 1 {
		t.Errorf("the server's log does not warn, once, of hook old:\n%s", log)
	}
	if n := runCount(t, s, ""); n != 0 {
		t.Errorf("%d runs; want none", n)
	}
}

// TestHookSecretsFile: a hook may name a secret of the server's
// --hook-secrets file; the file is read again on SIGHUP, a new value
// taking over from the old one; a name not in it is refused.
func TestHookSecretsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "hook-secrets")
	if err := os.WriteFile(file, []byte("# hook secrets\ngh=first-secret\nother=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(dir, "skein.db"), nil, "--poll", "50ms", "--hook-secrets", file)
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "hook", "create", "gh", "--module", "srv", "--workflow", "echo", "--secret", "gh"), 0, "(signed github, secret gh)")
	wantExit(t, s.cli(t, nil, "hook", "create", "nope", "--module", "srv", "--workflow", "echo", "--secret", "missing"), 1,
		`HTTP 400`, `secret "missing" is not in the server's hook secrets (skein serve --hook-secrets FILE)`)
	wantExit(t, s.cli(t, nil, "hook", "create", "both", "--module", "srv", "--workflow", "echo", "--secret", "gh", "--secret-env", "SKEIN_HOOK_X"), 1,
		"not both")
	body := []byte(`{"n":1}`)
	want(t, "signed with the file's secret", deliver(t, s, "gh", "", body, "X-Hub-Signature-256", sign("first-secret", body)), 201, "")

	if err := os.WriteFile(file, []byte(`{"gh": "second-secret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); countLines(s.stderr.String(), "read the hook secrets") < 2 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	body = []byte(`{"n":2}`)
	if r := deliver(t, s, "gh", "", body, "X-Hub-Signature-256", sign("first-secret", body)); r.status != 401 {
		t.Errorf("signed with the old secret after SIGHUP: %s; want 401", r)
	}
	want(t, "signed with the new secret after SIGHUP", deliver(t, s, "gh", "", body, "X-Hub-Signature-256", sign("second-secret", body)), 201, "")

	// A file that cannot be read again leaves the secrets as they were.
	if err := os.WriteFile(file, []byte("gh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.cmd.Process.Signal(syscall.SIGHUP)
	for end := time.Now().Add(5 * time.Second); !strings.Contains(s.stderr.String(), "the hook secrets were not read again") && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	body = []byte(`{"n":3}`)
	want(t, "after a bad file and SIGHUP", deliver(t, s, "gh", "", body, "X-Hub-Signature-256", sign("second-secret", body)), 201, "")
	if strings.Contains(s.stderr.String(), "second-secret") || strings.Contains(s.stderr.String(), "first-secret") {
		t.Errorf("the server's log holds a secret:\n%s", s.stderr.String())
	}
	s.stop(t)
	if r := skein(t, dir, "serve", "--db", filepath.Join(dir, "skein.db"), "--addr", "127.0.0.1:0", "--hook-secrets", file); r.code == 0 ||
		!strings.Contains(r.stderr, "line 1: want NAME=VALUE") {
		t.Errorf("serve with a bad secrets file: %s; want it refused, naming the line", r)
	}
}
