package runfilter

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func ns(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixNano()
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want store.RunFilter
	}{
		{"", store.RunFilter{}},
		{`status = failed and workflow = order and created > 2026-12-01T00:00:00Z and ended < -2h and error ~ "timeout" and attr.customer = 42`,
			store.RunFilter{Workflow: "order", CreatedFrom: ns("2026-12-01T00:00:00Z") + 1,
				Attrs: []store.AttrCond{{Name: "customer", Op: store.AttrEq, Value: int64(42)}},
				RunSelect: store.RunSelect{Statuses: []store.RunStatus{store.RunFailed}, EndedTo: now.Add(-2 * time.Hour).UnixNano(),
					ErrorContains: "timeout"}}},
		{`status in (failed, diverged) AND id in ("a~2", b)`, store.RunFilter{RunSelect: store.RunSelect{
			Statuses: []store.RunStatus{store.RunFailed, store.RunDiverged}, IDs: []string{"a~2", "b"}}}},
		{`created >= -7d and created <= 2026-12-02T00:00:00+02:00`, store.RunFilter{CreatedFrom: now.Add(-7 * 24 * time.Hour).UnixNano(),
			CreatedTo: ns("2026-12-01T22:00:00Z") + 1}},
		{`module = orders and parent = "p.1" and schedule = digest and hook = gh`, store.RunFilter{Module: "orders",
			RunSelect: store.RunSelect{Parent: "p.1", Schedule: "digest", Hook: "gh"}}},
		{`attr.tier != gold and attr.score >= 4.5 and attr.vip = true and attr.at < 2026-01-02T03:04:05.5Z and attr.name ~ "ann" and attr.n = "42"`,
			store.RunFilter{Attrs: []store.AttrCond{{Name: "tier", Op: store.AttrNe, Value: "gold"},
				{Name: "score", Op: store.AttrGe, Value: 4.5}, {Name: "vip", Op: store.AttrEq, Value: true},
				{Name: "at", Op: store.AttrLt, Value: time.Unix(0, ns("2026-01-02T03:04:05.5Z")).UTC()},
				{Name: "name", Op: store.AttrContains, Value: "ann"}, {Name: "n", Op: store.AttrEq, Value: "42"}}}},
	} {
		got, err := Parse(tc.in, now)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q):\n got  %+v\n want %+v", tc.in, got, tc.want)
		}
		back, err := Parse(Format(got), now.Add(time.Hour)) // absolute times: now no longer matters
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("Parse(Format(%q)) = %+v, %v; want %+v (Format: %s)", tc.in, back, err, got, Format(got))
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in        string
		pos       int
		term      string
		ruleWords string
	}{
		{"status = bogus", 9, "bogus", "want one of pending, running"},
		{"status = failed or status = canceled", 16, "or status = canceled", "there is no or"},
		{"colour = red", 0, "colour = red", "unknown field"},
		{"workflow > a", 0, "workflow > a", "workflow compares with = "},
		{"created = -2h", 0, "created = -2h", "created compares with > >= < <="},
		{"created > yesterday", 10, "yesterday", "RFC 3339 time"},
		{"workflow = a and workflow = b", 17, "workflow = b", "at most once"},
		{"error ~ \"open", 8, "\"open", "no closing"},
		{"workflow in (a, b)", 0, "workflow in (a, b)", "only status and id"},
		{"status in (failed", 17, "end of filter", "closed by )"},
		{"attr.9x = 1", 0, "attr.9x = 1", "attribute name"},
		{"attr.n ~ 4", 9, "4", "strings only"},
		{"attr.n = 99999999999999999999", 9, "99999999999999999999", "64-bit"},
		{"status = failed and", 19, "end of filter", "starts with a field"},
		{"status ! failed", 7, "!", "!="},
		{"id = \"a\x00\"", 5, "\"a\x00\"", "without NUL"},
		{"workflow = \"\"", 11, "\"\"", "not empty"},
		{"created > 1969-01-01T00:00:00Z", 10, "1969-01-01T00:00:00Z", "after 1970"},
	} {
		_, err := Parse(tc.in, now)
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("Parse(%q) = %v, want an *Error", tc.in, err)
			continue
		}
		if e.Pos != tc.pos || e.Term != tc.term || !strings.Contains(e.Rule, tc.ruleWords) {
			t.Errorf("Parse(%q) = at %d %q: %s; want at %d %q, a rule with %q", tc.in, e.Pos, e.Term, e.Rule, tc.pos, tc.term, tc.ruleWords)
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts Format writes back
// as a filter Parse reads to the same RunFilter.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", `status = failed and workflow = order and created > 2026-12-01T00:00:00Z and ended < -2h and error ~ "timeout" and attr.customer = 42`,
		`status in (failed, diverged) and id in ("a~2", b)`, `attr.x >= 4.5e10 and attr.y = -0.0 and attr.z = "\xff"`,
		`module = "m" and parent = p and schedule = s and hook = h and created <= 2026-12-01T00:00:00.000000001+05:30`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s, now)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse(%q) error %v is not an *Error", s, err)
			}
			return
		}
		text := Format(got)
		back, err := Parse(text, now.Add(time.Hour))
		if err != nil {
			t.Fatalf("Parse(Format(Parse(%q))) = %v (Format: %s)", s, err, text)
		}
		if !reflect.DeepEqual(back, got) {
			t.Fatalf("Parse(%q) = %+v, but Parse(Format) = %+v (Format: %s)", s, got, back, text)
		}
	})
}
