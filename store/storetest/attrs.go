package storetest

import (
	"errors"
	"testing"

	"github.com/skeinrun/skein/store"
)

// testRunsAttrsRefused: a filter with attribute conditions is refused
// with ErrAttrsUnsupported by a store that records no attributes, never
// ignored (an action on what it selects would reach every run).
func testRunsAttrsRefused(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateRun(t, s, testRun("a"))
	mustCreateRun(t, s, testRun("b"))
	rs, err := s.Runs(ctx, store.RunFilter{Attrs: []store.AttrCond{{Name: "customer", Op: store.AttrEq, Value: int64(42)}}})
	if !errors.Is(err, store.ErrAttrsUnsupported) || rs != nil {
		t.Fatalf("Runs with an attribute condition = %d runs, %v; want ErrAttrsUnsupported", len(rs), err)
	}
}
