package doccheck

import (
	"slices"
	"testing"
)

// TestParseDocFences: a line that starts with inline code of four
// backticks (```` ```text ```` …) opens no fence, so the headings after
// it are headings; a real fence still hides what it holds.
func TestParseDocFences(t *testing.T) {
	d := parseDoc("# Top\n\n```` ```text ````, so that sh means it runs.\n\n## After inline\n\n```sh\n## in a fence\n```\n\n## After fence\n")
	var got []string
	for _, h := range d.headings {
		got = append(got, h.text)
	}
	if want := []string{"Top", "After inline", "After fence"}; !slices.Equal(got, want) {
		t.Errorf("headings = %q, want %q", got, want)
	}
}

// TestParseLayoutRow: a row's cells are read as the layout table's rule
// says, and a row spelt otherwise is refused with the rule.
func TestParseLayoutRow(t *testing.T) {
	r, err := parseLayoutRow("| `host/` | the host | `abi`, `store/`, `host/internal/sched` |")
	if err != nil {
		t.Fatal(err)
	}
	if r.folder != "host" || len(r.imports) != 3 || !r.imports["abi"] || !r.imports["store"] || !r.imports["host/internal/sched"] {
		t.Errorf("row = %+v", r)
	}
	if r, err := parseLayoutRow("| `abi/` | the contract | nothing |"); err != nil || r.folder != "abi" || len(r.imports) != 0 {
		t.Errorf("nothing: row %+v, error %v", r, err)
	}
	for _, bad := range []string{
		"| `host/` | the host | all of the above |",
		"| `host/` | the host | `abi` and more |",
		"| `host/` | the host | |",
		"| host/ | the host | nothing |",
		"| `host/` `store/` | two | nothing |",
		"| `host/` | the host |",
	} {
		if _, err := parseLayoutRow(bad); err == nil {
			t.Errorf("parseLayoutRow(%q) = nil error, want one", bad)
		}
	}
}
