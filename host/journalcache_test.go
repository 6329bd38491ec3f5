package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/skeinrun/skein/store"
)

// TestJournalCacheReplay: a run that suspends on a promise replays from the
// journal this host kept; a second host that drives the run in between
// makes the first read the store again. A completed run's journal is kept
// for verifying replays.
func TestJournalCacheReplay(t *testing.T) {
	ctx := context.Background()
	h := newTestHost(t, Config{})
	m := h.deploy(t, "./testdata/workflows/server")
	loads := func(h *Host) [2]uint64 {
		memory, stored := h.journals.Loads()
		return [2]uint64{memory, stored}
	}
	drive := func(h *Host, id string, want store.RunStatus) {
		t.Helper()
		r, err := h.Drive(ctx, id, DriveOptions{})
		if err != nil || r.Status != want {
			t.Fatalf("drive %s: %s, %v; want %s", id, r.Status, err, want)
		}
	}
	start := func(id string) {
		t.Helper()
		if _, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "waiter", ID: id}); err != nil {
			t.Fatal(err)
		}
		drive(h.Host, id, store.RunSuspended)
	}
	resolve := func(id string) {
		t.Helper()
		if err := h.Resolve(ctx, id+".approve", json.RawMessage(`"yes"`), ""); err != nil {
			t.Fatal(err)
		}
	}

	start("same")
	resolve("same")
	before := loads(h.Host)
	drive(h.Host, "same", store.RunCompleted)
	if got := loads(h.Host); got[0] != before[0]+1 || got[1] != before[1] {
		t.Errorf("the replay after a suspension loaded %d journals from memory and %d from the store; want 1 and 0", got[0]-before[0], got[1]-before[1])
	}

	// Another host (a second worker on the same store) drives the run
	// once, between two drives of the first: then the first must not
	// trust what it kept, and reads the store.
	start("taken")
	other, err := newHost(ctx, Config{Store: h.st, CacheDir: cacheDir}, withTestDefaults(testHooks{}))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	drive(other, "taken", store.RunSuspended)
	resolve("taken")
	before = loads(h.Host)
	r, err := h.Drive(ctx, "taken", DriveOptions{})
	if err != nil || r.Status != store.RunCompleted || string(r.Result) != `"approved: yes"` {
		t.Fatalf("drive taken after the other host: %s %s, %v", r.Status, r.Result, err)
	}
	if got := loads(h.Host); got[0] != before[0] || got[1] != before[1]+1 {
		t.Errorf("a run another host drove since loaded %d journals from memory and %d from the store; want 0 and 1", got[0]-before[0], got[1]-before[1])
	}

	// A completed run's journal is closed: the host that completed it
	// keeps it, and a verifying replay reads it from memory; another
	// host reads it from the store once, then from memory.
	replay := func(h *Host, id string, want [2]uint64) {
		t.Helper()
		before := loads(h)
		rr, err := h.Replay(ctx, id)
		if err != nil || rr.Status != store.RunCompleted || string(rr.Result) != `"approved: yes"` {
			t.Fatalf("replay %s: %+v, %v", id, rr, err)
		}
		if got := loads(h); got[0]-before[0] != want[0] || got[1]-before[1] != want[1] {
			t.Errorf("a verifying replay of %s loaded %d journals from memory and %d from the store; want %d and %d", id, got[0]-before[0], got[1]-before[1], want[0], want[1])
		}
	}
	replay(h.Host, "same", [2]uint64{1, 0})
	replay(h.Host, "taken", [2]uint64{1, 0})
	replay(other, "same", [2]uint64{0, 1})
	replay(other, "same", [2]uint64{1, 0})
}
