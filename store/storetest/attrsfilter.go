package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// testRunsAttrs: Runs selects by attribute conditions, every op on every
// type; a run without the attribute never matches (not even !=); int
// and float compare numerically with each other; conditions combine
// with the other filters and with each other.
func testRunsAttrs(t *testing.T, s store.Store) {
	ctx := t.Context()
	declareAttrs(t, s)
	t0 := time.Unix(1_700_000_000, 0)
	vals := map[string]map[string]any{
		"r1": {"s": "acme corp", "n": int64(42), "f": 1.5, "b": true, "t": t0},
		"r2": {"s": "Acme", "n": int64(-3), "f": 42.0, "b": false, "t": t0.Add(time.Hour)},
		"r3": {"s": "zeta", "n": int64(100), "f": -0.5, "b": true, "t": t0.Add(-time.Nanosecond)},
		"r4": {}, // no attributes
	}
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		r := testRun(id)
		if id == "r3" {
			r.Workflow = "beta"
		}
		r.Attrs = vals[id]
		mustCreateRun(t, s, r)
	}
	for _, tc := range []struct {
		conds []store.AttrCond
		want  string
	}{
		{[]store.AttrCond{{Name: "s", Op: store.AttrEq, Value: "Acme"}}, "r2"},
		{[]store.AttrCond{{Name: "s", Op: store.AttrNe, Value: "Acme"}}, "r1 r3"},
		{[]store.AttrCond{{Name: "s", Op: store.AttrLt, Value: "acme"}}, "r2"}, // bytewise: upper case first
		{[]store.AttrCond{{Name: "s", Op: store.AttrGe, Value: "acme"}}, "r1 r3"},
		{[]store.AttrCond{{Name: "s", Op: store.AttrContains, Value: "cme"}}, "r1 r2"},
		{[]store.AttrCond{{Name: "s", Op: store.AttrContains, Value: "CME"}}, ""},
		{[]store.AttrCond{{Name: "n", Op: store.AttrEq, Value: int64(42)}}, "r1"},
		{[]store.AttrCond{{Name: "n", Op: store.AttrNe, Value: int64(42)}}, "r2 r3"},
		{[]store.AttrCond{{Name: "n", Op: store.AttrGt, Value: int64(42)}}, "r3"},
		{[]store.AttrCond{{Name: "n", Op: store.AttrLe, Value: int64(42)}}, "r1 r2"},
		{[]store.AttrCond{{Name: "n", Op: store.AttrLt, Value: 41.5}}, "r2"},
		{[]store.AttrCond{{Name: "n", Op: store.AttrEq, Value: 42.0}}, "r1"},
		{[]store.AttrCond{{Name: "f", Op: store.AttrEq, Value: int64(42)}}, "r2"},
		{[]store.AttrCond{{Name: "f", Op: store.AttrGe, Value: 1.5}}, "r1 r2"},
		{[]store.AttrCond{{Name: "f", Op: store.AttrLt, Value: int64(0)}}, "r3"},
		{[]store.AttrCond{{Name: "b", Op: store.AttrEq, Value: true}}, "r1 r3"},
		{[]store.AttrCond{{Name: "b", Op: store.AttrNe, Value: true}}, "r2"},
		{[]store.AttrCond{{Name: "t", Op: store.AttrEq, Value: t0}}, "r1"},
		{[]store.AttrCond{{Name: "t", Op: store.AttrLt, Value: t0}}, "r3"},
		{[]store.AttrCond{{Name: "t", Op: store.AttrGe, Value: t0.In(time.UTC)}}, "r1 r2"},
		{[]store.AttrCond{{Name: "b", Op: store.AttrEq, Value: true}, {Name: "n", Op: store.AttrGt, Value: int64(50)}}, "r3"},
		{[]store.AttrCond{{Name: "b", Op: store.AttrEq, Value: false}, {Name: "n", Op: store.AttrGt, Value: int64(50)}}, ""},
	} {
		rs, err := s.Runs(ctx, store.RunFilter{Attrs: tc.conds})
		if err != nil {
			t.Errorf("Runs(%v): %v", tc.conds, err)
			continue
		}
		if got := sortedIDs(rs); got != tc.want {
			t.Errorf("Runs(%v) = [%s], want [%s]", tc.conds, got, tc.want)
		}
	}
	// With the other filters, an order and a page.
	rs, err := s.Runs(ctx, store.RunFilter{Workflow: "alpha", Attrs: []store.AttrCond{{Name: "b", Op: store.AttrEq, Value: true}}})
	if got := sortedIDs(rs); err != nil || got != "r1" {
		t.Errorf("Runs(workflow alpha, b = true) = [%s], %v; want [r1]", got, err)
	}
	rs, err = s.Runs(ctx, store.RunFilter{Order: store.OrderCreated, Desc: true, Limit: 1, Attrs: []store.AttrCond{{Name: "n", Op: store.AttrNe, Value: int64(0)}}})
	if got := sortedIDs(rs); err != nil || got != "r3" {
		t.Errorf("Runs(created desc, limit 1, n != 0) = [%s], %v; want [r3]", got, err)
	}
}

// testRunsAttrsRefused: a condition the declarations refuse fails Runs
// with ErrAttrCond naming the attribute and the rule; it is never
// ignored (an action on what it selects would reach every run).
func testRunsAttrsRefused(t *testing.T, s store.Store) {
	ctx := t.Context()
	declareAttrs(t, s)
	mustCreateRun(t, s, testRun("a"))
	for _, tc := range []struct {
		cond store.AttrCond
		want string
	}{
		{store.AttrCond{Name: "customer", Op: store.AttrEq, Value: int64(42)}, `attribute "customer" is not declared`},
		{store.AttrCond{Name: "n", Op: store.AttrEq, Value: "42"}, `attribute "n" is a int: it cannot be compared with a string`},
		{store.AttrCond{Name: "s", Op: store.AttrEq, Value: int64(1)}, `attribute "s" is a string: it cannot be compared with a int`},
		{store.AttrCond{Name: "t", Op: store.AttrGt, Value: int64(1)}, `attribute "t" is a time`},
		{store.AttrCond{Name: "b", Op: store.AttrLt, Value: true}, `attribute "b" is a bool: only = and != compare it`},
		{store.AttrCond{Name: "n", Op: store.AttrContains, Value: int64(1)}, `compares strings only`},
		{store.AttrCond{Name: "n", Op: "<>", Value: int64(1)}, `unknown comparison <>`},
	} {
		rs, err := s.Runs(ctx, store.RunFilter{Attrs: []store.AttrCond{tc.cond}})
		if !errors.Is(err, store.ErrAttrCond) || rs != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Runs(%v) = %d runs, %v; want ErrAttrCond with %q", tc.cond, len(rs), err, tc.want)
		}
	}
}

// sortedIDs is the ids of rs, sorted, joined by spaces.
func sortedIDs(rs []store.Run) string {
	ids := runIDs(rs)
	slices.Sort(ids)
	return strings.Join(ids, " ")
}
