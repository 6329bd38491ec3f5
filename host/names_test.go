package host

import (
	"context"
	"slices"
	"testing"

	"github.com/skeinrun/skein/internal/lineage"
	"github.com/skeinrun/skein/store"
)

// emptyNameWant is what testdata/workflows/probe's emptyname returns:
// every op kind fails with the rule "empty", in the words of lineage.
func emptyNameWant() map[string]string {
	text := func(scope string) string {
		e := &lineage.StepIDError{Scope: scope, Rule: lineage.RuleEmpty}
		return lineage.RuleEmpty + "|" + scope + "|" + e.Error()
	}
	want := map[string]string{"in-task": text("t2")}
	for _, op := range []string{"step", "go", "parallel", "sleep", "promise", "call", "child"} {
		want[op] = text("")
	}
	return want
}

// An explicit empty name (skein.ID("")) is an id error of every op kind,
// raised before anything is issued: no body runs, no position is used,
// nothing is recorded. Live, with a replay at every wait, and on a
// verifying replay.
func TestEmptyNameIsIDError(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictAlways} {
		h := newTestHost(t, Config{Evict: evict})
		m := h.deploy(t, "./testdata/workflows/probe")
		r := h.runToEnd(t, m, "emptyname", "null", "empty-"+string(evict))
		if r.Status != store.RunCompleted {
			t.Fatalf("%s: %s %s", evict, r.Status, r.Error)
		}
		var got map[string]string
		mustJSON(t, r.Result, &got)
		if want := emptyNameWant(); !equalMap(got, want) {
			t.Fatalf("%s: results\n got %q\nwant %q", evict, got, want)
		}
		outs := h.outcomes(t, r.ID)
		if keys := keysOf(outs); !slices.Equal(keys, []string{"1"}) || outs[0].Function != "after" {
			t.Fatalf("%s: recorded %q (want only the step \"after\" at key 1)", evict, keys)
		}
		if bodies := h.c.bodiesOf(r.ID); len(bodies) != 1 || bodies["1"] != 1 {
			t.Fatalf("%s: bodies that ran: %v", evict, bodies)
		}
		if rr, err := h.Replay(context.Background(), r.ID); err != nil || string(rr.Result) != string(r.Result) {
			t.Fatalf("%s: replay %s %v", evict, rr.Result, err)
		}
	}
}
