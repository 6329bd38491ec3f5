package main

import (
	"maps"
	"strings"
	"testing"
)

// TestParseHookSecrets: the two forms of a hook secrets file, and the
// errors of a bad one, which never quote a value.
func TestParseHookSecrets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file string
		want map[string]string
	}{
		{"# comment\n\ngh=s3cret\nstripe = whsec_a=b\r\n", map[string]string{"gh": "s3cret", "stripe": "whsec_a=b"}},
		{`  {"gh": "s3cret", "a.b-c_d": "x"}`, map[string]string{"gh": "s3cret", "a.b-c_d": "x"}},
		{"", map[string]string{}},
	} {
		got, err := parseHookSecrets([]byte(c.file))
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%q: %q, %v; want %q", c.file, got, err, c.want)
		}
	}
	for _, c := range []struct{ file, msg string }{
		{"gh\n", "line 1: want NAME=VALUE"},
		{"ok=1\ngh=\n", `line 2: secret "gh" is empty`},
		{"a b=c\n", `line 1: secret name "a b"`},
		{"gh=1\ngh=2\n", `line 2: secret "gh" is named twice`},
		{`{"gh": 1}`, "want a JSON object of names to string values"},
		{`{"gh": ""}`, `secret "gh" is empty`},
	} {
		_, err := parseHookSecrets([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v; want an error naming %q", c.file, err, c.msg)
		}
		if err != nil && strings.Contains(err.Error(), "=2") {
			t.Errorf("%q: the error %q quotes a value", c.file, err)
		}
	}
}
