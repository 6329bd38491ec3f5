package main

// Tests of texts no store can hold (a NUL byte, bytes that are not
// UTF-8) that a module or a client puts into what skein records: every
// run ends, with the same outcome on SQLite and on Postgres, and the
// API answers 400, not 500.

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// badTextCase is one attack of testdata/workflows/badtext and what the
// run must end with: its status and words of its error, where the bad
// text is written as the host escapes it (\x00, \xff\xfe).
type badTextCase struct {
	attack  string
	want    string // status
	errText string // with %s for the escaped bad text
	key     string // an outcome the run must record with an error holding errText, "" for none
}

var badTextCases = []badTextCase{
	{"function", "failed", `step op: the function name "comp%sute"`, ""},
	{"call", "failed", `call op: the function name "charge%s"`, ""},
	{"child", "failed", `child op: the function name "kid%s"`, ""},
	{"id", "failed", `a name must be valid UTF-8 without control characters`, ""},
	{"step-error", "failed", `step%serror`, "1"},
	{"panic", "failed", `panic%stext`, ""},
	{"error", "failed", `workflow%serror`, ""},
}

// escaped is the bad text of a test input as the host records it.
func escaped(text string) string {
	if text == "utf8" {
		return `\xff\xfe`
	}
	return `\x00`
}

// quoted is the bad text as Go's %q writes it in a message.
func quoted(text string) string {
	if text == "utf8" {
		return `\xff\xfe`
	}
	return `\x00`
}

func TestBadTextsSQLite(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	checkBadTexts(t, s)
}

func TestBadTextsPostgres(t *testing.T) {
	t.Parallel()
	s := startPostgresServer(t, postgresSchema(t))
	checkBadTexts(t, s)
}

// checkBadTexts runs every attack with both bad texts on s: each run
// ends as its case says, and the other runs of the server are
// unaffected; then API requests with a NUL in their texts get 400.
func checkBadTexts(t *testing.T, s *skeinServer) {
	wasm := wasmbuild.Build(t, "./testdata/workflows/badtext")
	wantExit(t, s.cli(t, nil, "deploy", wasm, "--name", "bt"), 0)
	deployServerModule(t, s, nil)
	for _, c := range badTextCases {
		for _, text := range []string{"nul", "utf8"} {
			id := c.attack + "-" + text
			in := `{"attack":"` + c.attack + `","text":"` + text + `"}`
			wantExit(t, s.cli(t, nil, "start", "bt", "--workflow", "attack", "--input", in, "--id", id), 0)
		}
	}
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "echo", "--input", `"fine"`, "--id", "innocent"), 0)
	for _, c := range badTextCases {
		for _, text := range []string{"nul", "utf8"} {
			id := c.attack + "-" + text
			run := s.awaitStatus(t, id, "", "completed", "failed", "canceled", "diverged")
			want := c.errText
			if strings.Contains(want, "%s") {
				want = strings.ReplaceAll(want, "%s", quoted(text))
			}
			if run.Status != c.want || !strings.Contains(run.Error, want) {
				t.Errorf("run %s: %s with error %q; want %s with %q", id, run.Status, run.Error, c.want, want)
			}
			if c.key != "" {
				checkEscapedOutcome(t, s, id, c.key, strings.ReplaceAll(c.errText, "%s", escaped(text)))
			}
		}
	}
	if run := s.awaitStatus(t, "innocent", "", "completed", "failed"); run.Status != "completed" {
		t.Errorf("the innocent run is %s (%q); want completed", run.Status, run.Error)
	}
	checkBadTextRequests(t, s)
}

// checkEscapedOutcome checks that the outcome at key of run id is an
// error holding want.
func checkEscapedOutcome(t *testing.T, s *skeinServer, id, key, want string) {
	t.Helper()
	for _, o := range s.outcomes(t, id, "").Outcomes {
		if o.Key == key {
			if o.Error == nil || !strings.Contains(*o.Error, want) {
				t.Errorf("run %s, outcome %s: error %v; want one holding %q", id, key, o.Error, want)
			}
			return
		}
	}
	t.Errorf("run %s has no outcome %s", id, key)
}

// checkBadTextRequests sends API requests with a NUL in a text field or
// path: a 400 or a 404 that names the input, never a 500; a cancel
// reason and a promise's error text are recorded escaped.
func checkBadTextRequests(t *testing.T, s *skeinServer) {
	t.Helper()
	for _, c := range []struct {
		method, path string
		body         string
		status       int
	}{
		{"POST", "/v1/runs", `{"module":"srv","workflow":"echo","input":1,"id":"a\u0000b"}`, 400},
		{"POST", "/v1/runs", `{"module":"s\u0000rv","workflow":"echo","input":1}`, 404},
		{"POST", "/v1/runs", `{"module":"srv","workflow":"ec\u0000ho","input":1}`, 400},
		{"GET", "/v1/runs/a%00b", ``, 404},
		{"GET", "/v1/runs/a%00b/outcomes", ``, 404},
		{"GET", "/v1/modules/a%00b", ``, 404},
		{"POST", "/v1/promises/a%00b.approve", `{"value":1}`, 404},
		{"POST", "/v1/runs/a%00b/cancel", `{"reason":"x"}`, 404},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := s.call(t, c.method, c.path, "", body)
		if r.status != c.status {
			t.Errorf("%s %s %s: %s; want %d", c.method, c.path, c.body, r, c.status)
		}
	}
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--input", "{}", "--id", "nul-wait"), 0)
	s.awaitOutcome(t, "nul-wait", "approve")
	if r := s.call(t, "POST", "/v1/promises/nul-wait.approve", "", `{"error":"no\u0000way"}`); r.status != 200 {
		t.Errorf("settle with a NUL in the error: %s; want 200", r)
	}
	if run := s.awaitStatus(t, "nul-wait", "", "failed", "completed"); !strings.Contains(run.Error, `no\x00way`) {
		t.Errorf("nul-wait: %s with error %q; want the settled error, escaped", run.Status, run.Error)
	}
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--input", "{}", "--id", "nul-cancel"), 0)
	s.awaitOutcome(t, "nul-cancel", "approve")
	if r := s.call(t, "POST", "/v1/runs/nul-cancel/cancel", "", `{"reason":"stop\u0000now"}`); r.status != 200 {
		t.Errorf("cancel with a NUL in the reason: %s; want 200", r)
	}
	if run := s.awaitStatus(t, "nul-cancel", "", "canceled"); !strings.Contains(run.Error, `stop\x00now`) {
		t.Errorf("nul-cancel: error %q; want the reason, escaped", run.Error)
	}
}

// TestCancelEndsUndrivableRun: a cancel always ends a run, even one that
// cannot be driven any more (here its module's bytes were damaged in the
// database, so every drive fails to compile it): after its drive failed
// twice, the worker ends it canceled without executing it, and says why.
func TestCancelEndsUndrivableRun(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	s := startServer(t, db, nil, "--poll", "50ms")
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "start", "srv", "--workflow", "waiter", "--input", "{}", "--id", "stuck"), 0)
	s.awaitOutcome(t, "stuck", "approve")
	s.stop(t)

	damageModules(t, db)
	s = startServer(t, db, nil, "--poll", "50ms", "--cache-dir", t.TempDir())
	wantExit(t, s.cli(t, nil, "cancel", "stuck", "--reason", "give up"), 0)
	run := s.awaitStatus(t, "stuck", "", "canceled")
	for _, w := range []string{"give up", "ended without executing: the run could not be driven"} {
		if !strings.Contains(run.Error, w) {
			t.Errorf("stuck: error %q lacks %q", run.Error, w)
		}
	}
	if run.Worker != "" {
		t.Errorf("stuck is still held by %s after it was canceled", run.Worker)
	}
}

// damageModules overwrites the bytes of every module in the SQLite
// database db with bytes that are not WebAssembly.
func damageModules(t *testing.T, db string) {
	t.Helper()
	d, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Exec(`UPDATE module_bytes SET bytes = X'0061736d01000000ffff'`); err != nil {
		t.Fatalf("damage the modules: %v", err)
	}
}
