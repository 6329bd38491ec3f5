package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// A tree of child runs deeper than MaxChildDepth fails at the run that
// would start the too-deep child; one within it completes.
func TestLimitChildDepth(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxChildDepth: 3})
	m := h.deploy(t, "./testdata/workflows/limits")
	r := h.runToEnd(t, m, "tree", `{"Depth":3,"Fan":2}`, "ok3")
	if r.Status != store.RunCompleted || string(r.Result) != "15" {
		t.Fatalf("depth 3 within the limit: %s %s %q", r.Status, r.Result, r.Error)
	}
	r = h.runToEnd(t, m, "tree", `{"Depth":4,"Fan":1}`, "deep4")
	// The run at depth 3 fails with the limit; its ancestors fail with it.
	leaf, err := h.st.Run(context.Background(), "deep4.1.1.1")
	if err != nil {
		t.Fatal(err)
	}
	wantLimit(t, h, leaf, `child run "tree" at key "1" would be 4 levels deep (limit Config.MaxChildDepth = 3; --max-child-depth)`)
	if r.Status != store.RunFailed || !strings.Contains(r.Error, "MaxChildDepth") {
		t.Errorf("root: %s %q", r.Status, r.Error)
	}
}

// A run that starts more children than MaxChildren fails.
func TestLimitChildren(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxChildren: 5})
	m := h.deploy(t, "./testdata/workflows/limits")
	if r := h.runToEnd(t, m, "tree", `{"Depth":1,"Fan":5}`, "five"); r.Status != store.RunCompleted {
		t.Fatalf("5 children: %s %q", r.Status, r.Error)
	}
	r := h.runToEnd(t, m, "tree", `{"Depth":1,"Fan":6}`, "six")
	wantLimit(t, h, r, "the run started more than 5 child runs (limit Config.MaxChildren = 5; --max-children)")
}

// Close stops the drives of child runs still executing for a parent that
// ended (here: over Config.MaxChildren) and abandoned them, before it
// releases the runtime their instances run on; the children stay
// durable, to be resumed. Before, Close unmapped their memory under them
// (SIGSEGV).
func TestCloseWithLiveChildren(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxChildren: 2})
	m := h.deploy(t, "./testdata/workflows/limits")
	r := h.runToEnd(t, m, "tree", `{"Depth":1,"Fan":3,"Nap":2000,"Abandon":true}`, "p")
	wantLimit(t, h, r, "the run started more than 2 child runs (limit Config.MaxChildren = 2; --max-children)")
	time.Sleep(200 * time.Millisecond) // the children are in their step bodies
	start := time.Now()
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("Close took %s: it waited for the children instead of stopping them", d)
	}
	time.Sleep(2500 * time.Millisecond) // past the children's naps: nothing runs on
	for _, id := range []string{"p.1", "p.2"} {
		if c, err := h.st.Run(context.Background(), id); err != nil || c.Status.Terminal() {
			t.Errorf("child %s after Close: %s %q %v; want it left to resume", id, c.Status, c.Error, err)
		}
	}
}

// A child run with a hashed id can end before its parent has committed
// the op that started it (the parent works on in a step body, no idle
// point): the child's end still reaches the parent, which completes.
func TestChildEndsBeforeParentCommits(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	m := h.deploy(t, "./testdata/workflows/limits")
	name := strings.Repeat("n", MaxRunIDLen)
	r := h.runToEnd(t, m, "tree", `{"Depth":1,"Fan":1,"Busy":300,"Name":"`+name+`"}`, "busy")
	if r.Status != store.RunCompleted || string(r.Result) != "2" {
		t.Fatalf("parent: %s %s %q", r.Status, r.Result, r.Error)
	}
	runs, err := h.st.Runs(context.Background(), store.RunFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range runs {
		if c.ID != r.ID && (!strings.Contains(c.ID, ".~") || c.Status != store.RunCompleted) {
			t.Errorf("child %s: %s %q; want a hashed id, completed", c.ID, c.Status, c.Error)
		}
	}
	if len(runs) != 2 {
		t.Errorf("%d runs, want the parent and its child", len(runs))
	}
}

// Child ids stay within the run id rule however deep the tree and however
// long the step names: past 128 characters they take the hashed form, and
// the results still reach their parents (live and replayed).
func TestChildIDsWithinTheRule(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictAlways} {
		h := newTestHost(t, Config{Evict: evict, MaxChildDepth: 20})
		m := h.deploy(t, "./testdata/workflows/limits")
		name := strings.Repeat("n", 40)
		r := h.runToEnd(t, m, "tree", `{"Depth":6,"Fan":1,"Name":"`+name+`"}`, "long-"+string(evict))
		if r.Status != store.RunCompleted || string(r.Result) != "7" {
			t.Fatalf("%s: %s %s %q", evict, r.Status, r.Result, r.Error)
		}
		runs, err := h.st.Runs(context.Background(), store.RunFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		hashed := 0
		for _, c := range runs {
			if len(c.ID) > MaxRunIDLen {
				t.Errorf("child id %q is %d characters", c.ID, len(c.ID))
			}
			if strings.Contains(c.ID, ".~") {
				hashed++
				if !strings.HasPrefix(c.ID, "long-"+string(evict)+".~") {
					t.Errorf("hashed child id %q does not start with its root", c.ID)
				}
			}
		}
		if len(runs) != 7 || hashed == 0 {
			t.Errorf("%s: %d runs, %d hashed ids; want 7 runs, some hashed", evict, len(runs), hashed)
		}
	}
	// The id is a pure function of the tree, and paths with characters
	// outside the alphabet are hashed too.
	if a, b := ChildRunID("r.x", "k"), ChildRunID("r.x", "k"); a != b || a != "r.x.k" {
		t.Errorf("ChildRunID: %q %q", a, b)
	}
	if id := ChildRunID("r", "a?b"); !strings.HasPrefix(id, "r.~") || len(id) != len("r.~")+24 {
		t.Errorf("ChildRunID with '?': %q", id)
	}
}

// Run ids are letters, digits and - _ : @; anything else is refused with
// the rule, before a run exists.
func TestRunIDAlphabet(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	m := h.deploy(t, "./testdata/workflows/limits")
	ctx := context.Background()
	for _, id := range []string{"a\x00b", "bell\a", "rtl\u202eevil", "q?x", "h#x", "p%41", "a.b", "a b", "a/b/c", "1a/b", "é", strings.Repeat("x", 129)} {
		_, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "tree", Input: json.RawMessage(`{}`), ID: id})
		if !errors.Is(err, ErrInvalid) || !(strings.Contains(err.Error(), "letters, digits and - _ : @") || strings.Contains(err.Error(), "longer than 128") || strings.Contains(err.Error(), "does not start with a letter")) {
			t.Errorf("id %q: %v", id, err)
		}
		if _, err := h.st.Run(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("id %q: a run exists (%v)", id, err)
		}
	}
	// A qualified id names its namespace (store/namespace.go): the rule
	// is the local part's.
	for _, id := range []string{"order-42", "user_7:retry@2", strings.Repeat("x", 128), "acme/order-42", "acme/" + strings.Repeat("x", 128)} {
		if _, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "tree", Input: json.RawMessage(`{}`), ID: id}); err != nil {
			t.Errorf("id %q: %v", id, err)
		}
	}
}
