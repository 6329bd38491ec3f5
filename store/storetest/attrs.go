package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// The search attribute cases of the suite (store.AttrStore and
// RunFilter.Attrs).

// declareAttrs declares one attribute of each type: s string, n int, f
// float, b bool, t time.
func declareAttrs(t *testing.T, s store.Store) {
	t.Helper()
	for name, typ := range map[string]store.AttrType{"s": store.AttrString, "n": store.AttrInt, "f": store.AttrFloat, "b": store.AttrBool, "t": store.AttrTime} {
		if _, err := s.CreateAttr(t.Context(), store.AttrDecl{Name: name, Type: typ}); err != nil {
			t.Fatalf("CreateAttr(%s %s): %v", name, typ, err)
		}
	}
}

// testAttrDecls: declarations are created once by name, listed by name,
// refused with a bad name or type, bounded by MaxAttrDecls, and deleted.
func testAttrDecls(t *testing.T, s store.Store) {
	ctx := t.Context()
	at := ts(7)
	d, err := s.CreateAttr(ctx, store.AttrDecl{Name: "customer", Type: store.AttrInt, CreatedAt: at})
	if err != nil || d.Name != "customer" || d.Type != store.AttrInt || !d.CreatedAt.Equal(at) {
		t.Fatalf("CreateAttr = %+v, %v", d, err)
	}
	if _, err := s.CreateAttr(ctx, store.AttrDecl{Name: "customer", Type: store.AttrString}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateAttr of a declared name: %v, want ErrConflict", err)
	}
	for _, bad := range []store.AttrDecl{{Name: "", Type: store.AttrInt}, {Name: "1x", Type: store.AttrInt},
		{Name: "a b", Type: store.AttrInt}, {Name: strings.Repeat("a", store.MaxAttrNameLen+1), Type: store.AttrInt}, {Name: "x", Type: "decimal"}} {
		if _, err := s.CreateAttr(ctx, bad); err == nil {
			t.Errorf("CreateAttr(%q %q) = nil error, want a refusal", bad.Name, bad.Type)
		}
	}
	if _, err := s.CreateAttr(ctx, store.AttrDecl{Name: "Region", Type: store.AttrString}); err != nil {
		t.Fatal(err)
	}
	ds, err := s.Attrs(ctx)
	if err != nil || len(ds) != 2 || ds[0].Name != "Region" || ds[1].Name != "customer" || ds[0].Type != store.AttrString {
		t.Fatalf("Attrs = %+v, %v; want Region, customer", ds, err)
	}
	if err := s.DeleteAttr(ctx, "Region"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAttr(ctx, "Region"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteAttr of a deleted name: %v, want ErrNotFound", err)
	}
	for i := 1; i < store.MaxAttrDecls; i++ {
		if _, err := s.CreateAttr(ctx, store.AttrDecl{Name: fmt.Sprintf("a%d", i), Type: store.AttrBool}); err != nil {
			t.Fatalf("CreateAttr #%d: %v", i+1, err)
		}
	}
	if _, err := s.CreateAttr(ctx, store.AttrDecl{Name: "over", Type: store.AttrBool}); !errors.Is(err, store.ErrAttrLimit) {
		t.Fatalf("CreateAttr past MaxAttrDecls: %v, want ErrAttrLimit", err)
	}
	// Another namespace has its own declarations, and its own limit.
	if _, err := s.CreateAttr(ctx, store.AttrDecl{Name: "acme/customer", Type: store.AttrString}); err != nil {
		t.Fatalf("CreateAttr(acme/customer) with namespace default full: %v; want it declared (a limit per namespace)", err)
	}
	if _, err := s.CreateAttr(ctx, store.AttrDecl{Name: "bad ns/x", Type: store.AttrString}); err == nil {
		t.Error("CreateAttr of a name qualified by a bad namespace = nil error, want a refusal")
	}
	if err := s.DeleteAttr(ctx, "acme/customer"); err != nil {
		t.Fatal(err)
	}
	ds, err = s.Attrs(ctx)
	if err != nil || len(ds) != store.MaxAttrDecls || ds[len(ds)-1].Name != "customer" {
		t.Errorf("after deleting acme/customer: %d declarations, %v; want default's %d, customer kept", len(ds), err, store.MaxAttrDecls)
	}
}

// testRunAttrs: values written with a run's creation and by batches are
// read back with their types; a later value of a name replaces the
// earlier; deleting a declaration deletes its values.
func testRunAttrs(t *testing.T, s store.Store) {
	ctx := t.Context()
	declareAttrs(t, s)
	when := time.Unix(1_700_000_000, 123_456_789)
	r := testRun("a")
	r.Attrs = map[string]any{"s": "acme", "n": int64(-42), "f": 2.5, "b": true, "t": when}
	if got := mustCreateRun(t, s, r); got.Attrs != nil {
		t.Errorf("CreateRun returned Attrs %v, want nil (read by RunAttrs)", got.Attrs)
	}
	mustCreateRun(t, s, testRun("b"))
	got, err := s.RunAttrs(ctx, []string{"a", "b", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	checkAttrValues(t, "after CreateRun", got["a"], r.Attrs)
	if _, ok := got["b"]; ok || len(got) != 1 {
		t.Errorf("RunAttrs = %v, want only run a", got)
	}
	c := testRun("c")
	c.Attrs = map[string]any{"n": int64(1)}
	err = s.Commit(ctx, store.Batch{Creates: []store.Run{c}, Attrs: []store.RunAttrs{
		{RunID: "a", Values: map[string]any{"n": int64(7), "s": ""}}, {RunID: "b", Values: map[string]any{"b": false}}, {RunID: "c", Values: map[string]any{"f": -1.0}}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = s.RunAttrs(ctx, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	checkAttrValues(t, "run a after a batch", got["a"], map[string]any{"s": "", "n": int64(7), "f": 2.5, "b": true, "t": when})
	checkAttrValues(t, "run b after a batch", got["b"], map[string]any{"b": false})
	checkAttrValues(t, "run c after a batch", got["c"], map[string]any{"n": int64(1), "f": -1.0})
	for _, bad := range []map[string]any{{"n": 7}, {"n": []int{1}}, {"bad name": "x"}, {"s": strings.Repeat("x", store.MaxAttrText+1)}, {"s": "a\x00b"}} {
		if err := s.Commit(ctx, store.Batch{Attrs: []store.RunAttrs{{RunID: "a", Values: bad}}}); err == nil {
			t.Errorf("Commit of attributes %v = nil error, want a refusal", bad)
		}
	}
	if err := s.DeleteAttr(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	got, err = s.RunAttrs(ctx, []string{"a", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["a"]["n"]; ok {
		t.Errorf("run a keeps n after DeleteAttr: %v", got["a"])
	}
	checkAttrValues(t, "run c after DeleteAttr", got["c"], map[string]any{"f": -1.0})
}

func checkAttrValues(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: attributes %v, want %v", what, got, want)
		return
	}
	for k, w := range want {
		g, ok := got[k]
		wt, isTime := w.(time.Time)
		gt, gotTime := g.(time.Time)
		switch {
		case !ok:
			t.Errorf("%s: no attribute %s (want %v)", what, k, w)
		case isTime && (!gotTime || !gt.Equal(wt)):
			t.Errorf("%s: %s = %v (%T), want %v", what, k, g, g, w)
		case !isTime && g != w:
			t.Errorf("%s: %s = %v (%T), want %v (%T)", what, k, g, g, w, w)
		}
	}
}
