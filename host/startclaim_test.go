package host

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// TestStartClaimForDrive: a run started with ClaimForDrive is stored
// leased to the host before it is driven, and its Drive takes that lease
// (one claim in the history, released at the end); with less than half
// of the lease left, the Drive renews it first. Without the option, the
// run is stored unleased and its Drive claims it.
func TestStartClaimForDrive(t *testing.T) {
	ctx := context.Background()
	h := newTestHost(t, Config{})
	m := h.deploy(t, "./testdata/workflows/server")
	start := func(id string, claim bool) {
		t.Helper()
		if _, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "sleeper", Input: json.RawMessage(`{"ms":1}`), ID: id, ClaimForDrive: claim}); err != nil {
			t.Fatal(err)
		}
	}
	history := func(id string) []store.LeaseRecord {
		t.Helper()
		hist, err := h.LeaseHistory(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return hist
	}
	drive := func(id string) {
		t.Helper()
		if r, err := h.Drive(ctx, id, DriveOptions{WaitTimers: true}); err != nil || r.Status != store.RunCompleted {
			t.Fatalf("drive %s: %s, %v", id, r.Status, err)
		}
	}

	start("claimed", true)
	if hist := history("claimed"); len(hist) != 1 || hist[0].Owner != h.owner || hist[0].Token != 1 || hist[0].ReleasedAt != 0 {
		t.Fatalf("lease history after the start: %+v; want the host's lease 1, held", hist)
	}
	_, fromStore := h.journals.Loads()
	drive("claimed")
	if _, now := h.journals.Loads(); now != fromStore {
		t.Errorf("the first execution of a run created leased read its journal from the store (%d reads); want the empty journal kept at its creation", now-fromStore)
	}
	if hist := history("claimed"); len(hist) != 1 || hist[0].ReleasedAt == 0 {
		t.Errorf("lease history after the drive: %+v; want the start's lease only, released", hist)
	}

	start("plain", false)
	if hist := history("plain"); len(hist) != 0 {
		t.Fatalf("lease history of a run started without the option: %+v; want none", hist)
	}
	drive("plain")
	if hist := history("plain"); len(hist) != 1 || hist[0].ReleasedAt == 0 {
		t.Errorf("lease history after the drive: %+v; want the drive's claim, released", hist)
	}

	start("late", true)
	h.mu.Lock()
	c := h.preclaimed["late"]
	stored := c.Lease.Expiry
	c.Lease.Expiry = time.Now().Add(time.Second).UnixNano() // as if the start were 9 s ago
	h.preclaimed["late"] = c
	h.mu.Unlock()
	drive("late")
	if hist := history("late"); len(hist) != 1 || hist[0].Expiry <= stored {
		t.Errorf("lease history after a late drive: %+v; want the start's lease, renewed past %d for the drive", hist, stored)
	}
}
