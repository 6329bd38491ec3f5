package host

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// Both provision workflows of docs/design.md ("Ids"): result and keys, live
// and with eviction at every wait, and a verifying replay.
func TestProvisionKeys(t *testing.T) {
	want := map[string][]string{
		"provision_vm":       {"1", "2.0.1", "2.1.1"},
		"provision_vm_named": {"create-vm", "fanout.0.attach-ip", "fanout.1.setup-sg"},
	}
	for _, evict := range []Evict{EvictNever, EvictAlways} {
		h := newTestHost(t, Config{Evict: evict})
		m := h.deploy(t, "./examples/provision")
		for wf, keys := range want {
			r := h.runToEnd(t, m, wf, `{"name":"web","size":"small"}`, wf+"-"+string(evict))
			if r.Status != store.RunCompleted || string(r.Result) != `"10.0.0.7/vm-web-small"` {
				t.Fatalf("%s %s: %s %s %s", wf, evict, r.Status, r.Result, r.Error)
			}
			if got := keysOf(h.outcomes(t, r.ID)); !slices.Equal(got, keys) {
				t.Fatalf("%s %s: keys %q, want %q", wf, evict, got, keys)
			}
			if rr, err := h.Replay(context.Background(), r.ID); err != nil || string(rr.Result) != string(r.Result) {
				t.Fatalf("%s %s: replay %s %v", wf, evict, rr.Result, err)
			}
		}
	}
}

// suspendedV1 runs workflow wf of versions/v1 until it suspends on its
// durable timer and returns the host, the run and the v2 module.
func suspendedV1(t *testing.T, wf string) (*testHost, store.Run, store.Module) {
	t.Helper()
	h := newTestHost(t, Config{Evict: EvictIdle, IdleThreshold: 10 * time.Millisecond})
	v1 := h.deploy(t, "./testdata/workflows/versions/v1")
	v2 := h.deploy(t, "./testdata/workflows/versions/v2")
	ctx := context.Background()
	r, err := h.Start(ctx, StartOptions{Module: v1.Hash, Workflow: wf, ID: wf})
	if err != nil {
		t.Fatal(err)
	}
	r, err = h.Drive(ctx, r.ID, DriveOptions{})
	if err != nil || r.Status != store.RunSuspended || r.WakeAt == 0 {
		t.Fatalf("v1 %s: %v %s %s (want suspended on its timer)", wf, err, r.Status, r.Error)
	}
	return h, r, v2
}

// Inserting a step at the top of positional code: the resumed run
// diverges with a CodeMismatchError at key 1, and keeps every v1 record.
func TestCodeChangePositional(t *testing.T) {
	h, r, v2 := suspendedV1(t, "positional")
	before := h.outcomes(t, r.ID)
	got, err := h.Resume(context.Background(), r.ID, v2.Hash, DriveOptions{WaitTimers: true})
	var cm *CodeMismatchError
	if !errors.As(err, &cm) {
		t.Fatalf("resume: %v, want a CodeMismatchError", err)
	}
	if cm.Key != "1" || cm.Recorded != "create_vm" || cm.Got != "audit" {
		t.Fatalf("mismatch %+v", cm)
	}
	if got.Status != store.RunDiverged {
		t.Fatalf("status %s", got.Status)
	}
	after := h.outcomes(t, r.ID)
	if len(after) != len(before) {
		t.Fatalf("records changed: %v -> %v", keysOf(before), keysOf(after))
	}
	for i := range before {
		if d := diffOutcome(before[i], after[i]); d != "" || before[i].Status != after[i].Status {
			t.Fatalf("record %s changed: %s", before[i].Key, d)
		}
	}
	stored, _ := h.st.Run(context.Background(), r.ID)
	if stored.Status != store.RunDiverged || stored.Error != cm.Error() {
		t.Fatalf("stored run %s %q", stored.Status, stored.Error)
	}
}

// The same insertion in named code: the run completes, no named step
// runs again, and the new unnamed step gets its own key.
func TestCodeChangeNamed(t *testing.T) {
	h, r, v2 := suspendedV1(t, "named")
	got, err := h.Resume(context.Background(), r.ID, v2.Hash, DriveOptions{WaitTimers: true})
	if err != nil || got.Status != store.RunCompleted {
		t.Fatalf("resume: %v %s %s", err, got.Status, got.Error)
	}
	if string(got.Result) != `"vm+ip"` {
		t.Fatalf("result %s", got.Result)
	}
	for key, n := range h.c.bodiesOf(r.ID) {
		if n != 1 {
			t.Errorf("step %s ran %d times", key, n)
		}
	}
	want := []string{"1", "create-vm", "fanout.0.attach-ip", "fanout.1.setup-sg", "finish", "wait"}
	if ks := keysOf(h.outcomes(t, r.ID)); !slices.Equal(ks, want) {
		t.Fatalf("keys %q, want %q", ks, want)
	}
	if h.c.bodiesOf(r.ID)["1"] != 1 {
		t.Fatalf("the inserted step did not run once: %v", h.c.bodiesOf(r.ID))
	}
}

// Renaming a step gives it a new identity: it runs again on resume; the
// old record is kept and marked orphaned.
func TestRename(t *testing.T) {
	h, r, v2 := suspendedV1(t, "rename")
	got, err := h.Resume(context.Background(), r.ID, v2.Hash, DriveOptions{WaitTimers: true})
	if err != nil || got.Status != store.RunCompleted || string(got.Result) != `"A2B"` {
		t.Fatalf("resume: %v %s %s %s", err, got.Status, got.Result, got.Error)
	}
	bodies := h.c.bodiesOf(r.ID)
	if bodies["alpha"] != 1 || bodies["alpha2"] != 1 || bodies["beta"] != 1 {
		t.Fatalf("body runs %v", bodies)
	}
	orphaned := map[string]bool{}
	for _, o := range h.outcomes(t, r.ID) {
		orphaned[o.Key] = o.Orphaned
	}
	if want := map[string]bool{"alpha": true, "alpha2": false, "wait": false, "beta": false}; !equalMap(orphaned, want) {
		t.Fatalf("orphaned %v, want %v", orphaned, want)
	}
}

func equalMap[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Every naming rule is enforced from the guest, before the op runs.
func TestNameRules(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	m := h.deploy(t, "./testdata/workflows/probe")
	r := h.runToEnd(t, m, "badnames", "null", "names")
	if r.Status != store.RunCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	var got map[string]string
	mustJSON(t, r.Result, &got)
	want := map[string]string{
		"dot": "dot", "space": "whitespace", "tab": "whitespace", "numeric": "numeric", "task": "task-segment",
		"long": "too-long", "max": "ok", "first": "ok", "dup": "duplicate", "fanout-step": "ok",
		"fanout-fork": "duplicate", "branches": "ok", "go": "dot", "sleep": "numeric",
	}
	if !equalMap(got, want) {
		t.Fatalf("rules\n got %v\nwant %v", got, want)
	}
	// Only the accepted ops ran their bodies.
	bodies := h.c.bodiesOf(r.ID)
	if len(bodies) != 5 { // the four below and the 300-character name
		t.Fatalf("bodies that ran: %v", bodies)
	}
	for _, k := range []string{"dup", "fanout", "fan2.0.same", "fan2.1.same"} {
		if bodies[k] != 1 {
			t.Fatalf("body %s ran %d times; all: %v", k, bodies[k], bodies)
		}
	}
}

// Select answers by journal order: the later-created timer settles first
// live, and a replay picks the same index.
func TestSelectReplay(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictAlways} {
		h := newTestHost(t, Config{Evict: evict})
		m := h.deploy(t, "./testdata/workflows/probe")
		r := h.runToEnd(t, m, "selectfirst", "null", "select-"+string(evict))
		if r.Status != store.RunCompleted || string(r.Result) != "1" {
			t.Fatalf("%s: %s %s %s", evict, r.Status, r.Result, r.Error)
		}
		if evict == EvictAlways && h.c.execs[r.ID] < 2 {
			t.Fatalf("no replay happened")
		}
		if rr, err := h.Replay(context.Background(), r.ID); err != nil || string(rr.Result) != "1" {
			t.Fatalf("%s: replay %s %v", evict, rr.Result, err)
		}
	}
}
