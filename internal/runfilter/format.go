package runfilter

import (
	"strconv"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// Format writes f's conditions in the language, in a fixed order, with
// absolute times: Parse(Format(f)) selects what f selects (and is f, for
// a filter Parse made). The order, limit and cursor are not written.
// Status (a single status, as GET /v1/runs?status= sets it) is written
// as a status term only when Statuses is empty.
func Format(f store.RunFilter) string {
	var terms []string
	add := func(s ...string) { terms = append(terms, strings.Join(s, " ")) }
	statuses := f.Statuses
	if len(statuses) == 0 && f.Status != "" {
		statuses = []store.RunStatus{f.Status}
	}
	switch len(statuses) {
	case 0:
	case 1:
		add("status", "=", string(statuses[0]))
	default:
		var ss []string
		for _, s := range statuses {
			ss = append(ss, string(s))
		}
		add("status in (" + strings.Join(ss, ", ") + ")")
	}
	switch len(f.IDs) {
	case 0:
	case 1:
		add("id", "=", strconv.Quote(f.IDs[0]))
	default:
		var qs []string
		for _, id := range f.IDs {
			qs = append(qs, strconv.Quote(id))
		}
		add("id in (" + strings.Join(qs, ", ") + ")")
	}
	for _, t := range []struct{ name, v string }{{"workflow", f.Workflow}, {"module", f.Module},
		{"parent", f.Parent}, {"schedule", f.Schedule}, {"hook", f.Hook}} {
		if t.v != "" {
			add(t.name, "=", strconv.Quote(t.v))
		}
	}
	for _, r := range []struct {
		name     string
		from, to int64
	}{{"created", f.CreatedFrom, f.CreatedTo}, {"ended", f.EndedFrom, f.EndedTo}} {
		if r.from != 0 {
			add(r.name, ">=", formatNs(r.from))
		}
		if r.to != 0 {
			add(r.name, "<", formatNs(r.to))
		}
	}
	if f.ErrorContains != "" {
		add("error", "~", strconv.Quote(f.ErrorContains))
	}
	for _, c := range f.Attrs {
		add("attr."+c.Name, string(c.Op), formatAttrValue(c.Value))
	}
	return strings.Join(terms, " and ")
}

func formatNs(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
