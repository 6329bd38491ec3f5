package server

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAPIRunsQuery: GET /v1/runs filters by workflow, module (by name or
// hash) and creation time, sorts by creation time both ways with the
// cursor walking the pages, and refuses a bad parameter with a 400 that
// names it.
func TestAPIRunsQuery(t *testing.T) {
	ta, m, _ := newSrvAPI(t)
	// Created in the order d, b, c, a.
	created := map[string]time.Time{}
	for _, c := range [][2]string{{"d", "echo"}, {"b", "sleeper"}, {"c", "echo"}, {"a", "echo"}} {
		a := ta.do("POST", "/v1/runs", `{"module":"srv","workflow":"`+c[1]+`","id":"`+c[0]+`","input":null}`)
		ta.want("start "+c[0], a, 201, "")
		var r Run
		if err := json.Unmarshal(a.body, &r); err != nil {
			t.Fatal(err)
		}
		created[c[0]] = r.CreatedAt
	}
	list := func(q string) ([]string, string) {
		t.Helper()
		a := ta.do("GET", "/v1/runs?"+q, nil)
		ta.want("GET /v1/runs?"+q, a, 200, "")
		var l RunList
		if err := json.Unmarshal(a.body, &l); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range l.Runs {
			ids = append(ids, r.ID)
		}
		return ids, l.NextCursor
	}
	at := func(id string) string { return url.QueryEscape(created[id].Format(time.RFC3339Nano)) }
	for q, want := range map[string][]string{
		"workflow=echo":                     {"a", "c", "d"},
		"workflow=sleeper":                  {"b"},
		"workflow=nope":                     nil,
		"module=srv&workflow=echo":          {"a", "c", "d"},
		"module=" + m.Hash:                  {"a", "b", "c", "d"},
		"module=" + strings.Repeat("0", 64): nil,
		"created_from=" + at("c"):           {"a", "c"},
		"created_before=" + at("c"):         {"b", "d"},
		"created_from=" + at("b") + "&created_before=" + at("a"): {"b", "c"},
		"sort=created":          {"d", "b", "c", "a"},
		"sort=-created":         {"a", "c", "b", "d"},
		"sort=-id":              {"d", "c", "b", "a"},
		"sort=id&workflow=echo": {"a", "c", "d"},
		"sort=status":           {"a", "b", "c", "d"}, // all pending: by id
		"sort=-ended":           {"d", "c", "b", "a"}, // none ended: by id, descending
	} {
		if got, _ := list(q); !slices.Equal(got, want) {
			t.Errorf("GET /v1/runs?%s = %q, want %q", q, got, want)
		}
	}
	// Page by page in each order, with next_cursor.
	for _, sort := range []string{"created", "-created", "-id", "duration"} {
		var all []string
		full, _ := list("sort=" + sort)
		cursor := ""
		for range 5 {
			ids, next := list("sort=" + sort + "&limit=1&cursor=" + url.QueryEscape(cursor))
			all = append(all, ids...)
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(all, full) {
			t.Errorf("sort=%s one at a time: %q, want %q", sort, all, full)
		}
	}
	for q, name := range map[string]string{
		"status=done":                       "status",
		"workflow=echo&module=nope":         "module",
		"created_from=yesterday":            "created_from",
		"created_before=2026-13-01":         "created_before",
		"created_from=1960-01-01T00:00:00Z": "created_from",
		"sort=name":                         "sort",
		"sort=-":                            "sort",
		"sort=created&cursor=abc":           "cursor",
		"sort=created&cursor=12:":           "cursor",
		"limit=0":                           "limit",
	} {
		a := ta.do("GET", "/v1/runs?"+q, nil)
		ta.want("GET /v1/runs?"+q, a, 400, CodeBadRequest)
		var e ErrorBody
		if err := json.Unmarshal(a.body, &e); err != nil || !strings.HasPrefix(e.Error.Message, name+" ") {
			t.Errorf("GET /v1/runs?%s: %s; want a message that starts with the parameter %s", q, a, name)
		}
	}
}
