package runfilter

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// field is one field of the language: the comparisons it takes (" = ",
// padded with spaces), whether it takes in (...), whether it is a range
// (a lower and an upper bound), and how its term sets the filter.
type field struct {
	ops    string
	in     bool
	ranged bool
	set    func(p *parser, f *store.RunFilter, ft token, op string, vals []token) error
}

const fieldList = "status, id, workflow, module, created, ended, parent, schedule, hook, error or attr.NAME"

var fields = map[string]field{
	"status":   {ops: " = ", in: true, set: setStatus},
	"id":       {ops: " = ", in: true, set: texts(func(f *store.RunFilter) *[]string { return &f.IDs })},
	"workflow": {ops: " = ", set: text(func(f *store.RunFilter) *string { return &f.Workflow })},
	"module":   {ops: " = ", set: text(func(f *store.RunFilter) *string { return &f.Module })},
	"parent":   {ops: " = ", set: text(func(f *store.RunFilter) *string { return &f.Parent })},
	"schedule": {ops: " = ", set: text(func(f *store.RunFilter) *string { return &f.Schedule })},
	"hook":     {ops: " = ", set: text(func(f *store.RunFilter) *string { return &f.Hook })},
	"error":    {ops: " ~ ", set: text(func(f *store.RunFilter) *string { return &f.ErrorContains })},
	"created": {ops: " > >= < <= ", ranged: true, set: timeRange(func(f *store.RunFilter) (*int64, *int64) {
		return &f.CreatedFrom, &f.CreatedTo
	})},
	"ended": {ops: " > >= < <= ", ranged: true, set: timeRange(func(f *store.RunFilter) (*int64, *int64) {
		return &f.EndedFrom, &f.EndedTo
	})},
}

// textValue is a value's text: a string's value or a word as written.
// It must be a text a store can hold (store.ValidText) and not empty.
func textValue(p *parser, ft, v token) (string, error) {
	switch {
	case v.text == "":
		return "", p.fail(v, ft.text+" wants a value that is not empty")
	case !store.ValidText(v.text):
		return "", p.fail(v, "a value is UTF-8 text without NUL bytes")
	}
	return v.text, nil
}

func text(at func(*store.RunFilter) *string) func(*parser, *store.RunFilter, token, string, []token) error {
	return func(p *parser, f *store.RunFilter, ft token, _ string, vals []token) error {
		v, err := textValue(p, ft, vals[0])
		*at(f) = v
		return err
	}
}

func texts(at func(*store.RunFilter) *[]string) func(*parser, *store.RunFilter, token, string, []token) error {
	return func(p *parser, f *store.RunFilter, ft token, _ string, vals []token) error {
		for _, t := range vals {
			v, err := textValue(p, ft, t)
			if err != nil {
				return err
			}
			*at(f) = append(*at(f), v)
		}
		return nil
	}
}

func setStatus(p *parser, f *store.RunFilter, ft token, _ string, vals []token) error {
	for _, t := range vals {
		s := store.RunStatus(t.text)
		if !slices.Contains(store.RunStatuses, s) {
			var names []string
			for _, s := range store.RunStatuses {
				names = append(names, string(s))
			}
			return p.fail(t, fmt.Sprintf("status %q: want one of %s", t.text, strings.Join(names, ", ")))
		}
		f.Statuses = append(f.Statuses, s)
	}
	return nil
}

// timeRange sets a [from, to) range of unix ns: > T is from T+1ns, <= T
// to T+1ns.
func timeRange(at func(*store.RunFilter) (*int64, *int64)) func(*parser, *store.RunFilter, token, string, []token) error {
	return func(p *parser, f *store.RunFilter, ft token, op string, vals []token) error {
		t, ok := p.timeValue(vals[0])
		if !ok || !inRange(t) {
			return p.fail(vals[0], ft.text+" compares with an RFC 3339 time after 1970 (2026-12-01T09:00:00Z) or a time relative to now (-2h, -30m, -7d)")
		}
		from, to := at(f)
		ns := t.UnixNano()
		switch op {
		case ">":
			*from = ns + 1
		case ">=":
			*from = ns
		case "<":
			*to = ns
		case "<=":
			*to = ns + 1
		}
		return nil
	}
}

var relRe = regexp.MustCompile(`^-([0-9]+)(ms|s|m|h|d|w)$`)

// timeValue reads an RFC 3339 time (in UTC) or a relative one, -N with a
// unit (ms, s, m, h, d for 24h, w for 7d), before p.now.
func (p *parser) timeValue(v token) (time.Time, bool) {
	if v.kind != tokWord {
		return time.Time{}, false
	}
	if m := relRe.FindStringSubmatch(v.text); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute,
			"h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}[m[2]]
		if err != nil || n > int64(math.MaxInt64/unit) {
			return time.Time{}, false
		}
		return p.now.Add(-time.Duration(n) * unit).UTC(), true
	}
	if !strings.ContainsAny(v.text, "Tt") {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v.text)
	return t.UTC(), err == nil
}

// inRange reports whether t is after 1970 and has a unix ns time one
// beyond which still fits an int64 (a <= bound adds 1ns).
func inRange(t time.Time) bool {
	return t.After(time.Unix(0, 0)) && t.Before(time.Unix(0, math.MaxInt64-1))
}
