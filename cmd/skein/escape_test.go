package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// noisyText is what the noisy workflows record and fail with: a colour
// escape, a bell, a right-to-left override, DEL, an 8-bit CSI (C1) and a
// line break.
const noisyText = "red \x1b[31mALERT\x1b[0m bell\x07 rtl\u202eevil del\x7f csi\u009b2J nl\nend"

// rawControls lists the characters of s that a terminal would act on:
// C0 controls other than the line break, DEL, C1 controls, bidirectional
// overrides and isolates, and bytes that are not UTF-8.
func rawControls(s string) []string {
	var bad []string
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			bad = append(bad, fmt.Sprintf("byte %#x at %d", s[i], i))
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			bad = append(bad, fmt.Sprintf("%U at %d", r, i))
		}
	}
	return bad
}

// wantNoControls fails if what r printed holds a raw control character,
// and checks that it shows the escaped forms instead.
func wantNoControls(t *testing.T, r result, shown ...string) {
	t.Helper()
	for name, s := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		if bad := rawControls(s); len(bad) > 0 {
			t.Errorf("skein %s: %s holds raw control characters %v:\n%q", strings.Join(r.args, " "), name, bad, s)
		}
	}
	for _, w := range shown {
		if !strings.Contains(r.stdout+r.stderr, w) {
			t.Errorf("skein %s: the output lacks %q:\n%s", strings.Join(r.args, " "), w, r)
		}
	}
}

// wantNoisyJSON checks a --json output: valid JSON, no raw control
// characters, and the noisy text intact once decoded.
func wantNoisyJSON(t *testing.T, r result, field func(runJSON) string) {
	t.Helper()
	wantNoControls(t, r)
	v := decodeRun(t, r)
	if got := field(v); !strings.Contains(got, noisyText) {
		t.Errorf("skein %s: the JSON decodes to %q; want it to hold %q", strings.Join(r.args, " "), got, noisyText)
	}
}

// TestCLIEscapesRunText: a workflow that records a value and fails with
// an error holding terminal escapes, a bell, U+202E, DEL and a C1 control;
// skein run, inspect, status and wait print none of them raw, locally
// and against a server, as text and as JSON.
func TestCLIEscapesRunText(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./testdata/workflows/noisy")
	input, err := json.Marshal(noisyText)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "skein.db")
	// The error text is printed as it is, escaped; a JSON value (a result,
	// an outcome's value) comes with its C0 controls already escaped by JSON.
	shown := []string{`\x1b[31mALERT`, `\x07`, `\u202e`, `\x7f`, `\u009b`}
	shownJSON := []string{`\u001b[31mALERT`, `\u0007`, `\u202e`, `\x7f`, `\u009b`}
	errorOf := func(v runJSON) string { return v.errorText() }
	valueOf := func(v runJSON) string {
		if len(v.Outcomes) == 0 {
			return ""
		}
		var s string
		json.Unmarshal(v.Outcomes[0].Value, &s)
		return s
	}

	t.Run("local", func(t *testing.T) {
		r := skein(t, "", "run", wasm, "--workflow", "fails", "--input", string(input), "--id", "noisy-1", "--db", db)
		if r.code != exitFailed {
			t.Fatalf("exit %d; want %d\n%s", r.code, exitFailed, r)
		}
		wantNoControls(t, r, shown...)
		r = skein(t, "", "run", wasm, "--workflow", "echoes", "--input", string(input), "--id", "noisy-2", "--db", db)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r)
		}
		wantNoControls(t, r, shownJSON...)
		wantNoControls(t, skein(t, "", "inspect", "noisy-1", "--db", db), shown...)
		wantNoControls(t, skein(t, "", "inspect", "noisy-2", "--db", db), shownJSON...)
		wantNoisyJSON(t, skein(t, "", "inspect", "noisy-1", "--db", db, "--json"), errorOf)
		wantNoisyJSON(t, skein(t, "", "run", wasm, "--workflow", "echoes", "--id", "noisy-2", "--db", db, "--json"), valueOf)
	})

	t.Run("server", func(t *testing.T) {
		s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
		wantExit(t, s.cli(t, nil, "deploy", wasm, "--name", "noisy"), 0)
		for _, wf := range []string{"fails", "echoes"} {
			wantExit(t, s.cli(t, nil, "start", "noisy", "--workflow", wf, "--input", string(input), "--id", "srv-"+wf), 0)
			s.awaitStatus(t, "srv-"+wf, "", "failed", "completed")
		}
		w := s.cli(t, nil, "wait", "srv-fails", "--timeout", "20s")
		if w.code != exitFailed {
			t.Errorf("wait: exit %d; want %d\n%s", w.code, exitFailed, w)
		}
		wantNoControls(t, w, shown...)
		wantNoControls(t, s.cli(t, nil, "wait", "srv-echoes", "--timeout", "20s"), shownJSON...)
		for id, shown := range map[string][]string{"srv-fails": shown, "srv-echoes": shownJSON} {
			wantNoControls(t, s.cli(t, nil, "status", id), shown...)
			wantNoControls(t, s.cli(t, nil, "inspect", id), shown...)
			wantNoControls(t, s.cli(t, nil, "status", id, "--json"))
		}
		wantNoisyJSON(t, s.cli(t, nil, "inspect", "srv-fails", "--json"), errorOf)
		wantNoisyJSON(t, s.cli(t, nil, "wait", "srv-echoes", "--json"), valueOf)
		s.stop(t)
	})
}
