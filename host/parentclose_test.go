package host

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

const parentClosePkg = "./testdata/workflows/parentclose"

// driveParent runs the parentclose workflow "parent" with policy to its
// end on h (a Drive, as skein run does) and returns it and its child.
func driveParent(t *testing.T, h *testHost, id, policy string) (store.Run, store.Run) {
	t.Helper()
	m := h.deploy(t, parentClosePkg)
	r := h.runToEnd(t, m, "parent", `{"policy":"`+policy+`","timer":"50ms","child":"1h"}`, id)
	if r.Status != store.RunCompleted || string(r.Result) != `"the timer won"` {
		t.Fatalf("parent: %s %s %s", r.Status, r.Result, r.Error)
	}
	child, err := h.st.Run(context.Background(), id+".1")
	if err != nil {
		t.Fatal(err)
	}
	return r, child
}

// A parent that ends while its child runs has it canceled (the default,
// and CancelChild), with a reason naming the parent, and its Drive
// returns only once the child has ended: nothing is left running.
func TestParentEndCancelsChild(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictAlways} {
		for _, policy := range []string{"", "cancel"} {
			h := newTestHost(t, Config{Evict: evict})
			_, child := driveParent(t, h, "pc", policy)
			want := "skein: canceled: parent run pc ended (completed)"
			if child.Status != store.RunCanceled || !strings.HasPrefix(child.Error, want) || child.Abandoned || child.ParentClose != store.ParentCloseCancel {
				t.Fatalf("%s, policy %q: child %s %q, abandoned %v, parent close %q; want canceled %q", evict, policy, child.Status, child.Error, child.Abandoned, child.ParentClose, want)
			}
		}
	}
}

// With AbandonChild the parent's end leaves the child running, marked
// abandoned; it completes on its own.
func TestParentEndAbandonsChild(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	_, child := driveParent(t, h, "pa", "abandon")
	if child.Status.Terminal() || !child.Abandoned || child.ParentClose != store.ParentCloseAbandon {
		t.Fatalf("child %s %q, abandoned %v, parent close %q; want running, abandoned", child.Status, child.Error, child.Abandoned, child.ParentClose)
	}
	// A short child, abandoned the same way, completes after its parent.
	m := h.deploy(t, parentClosePkg)
	r := h.runToEnd(t, m, "parent", `{"policy":"abandon","timer":"10ms","child":"300ms"}`, "pb")
	if r.Status != store.RunCompleted {
		t.Fatalf("parent: %s %s", r.Status, r.Error)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := h.Await(ctx, "pb.1")
	if err != nil || c.Status != store.RunCompleted || string(c.Result) != `"slept 300ms"` || !c.Abandoned {
		t.Fatalf("abandoned child: %+v %v; want completed, abandoned", c, err)
	}
}
