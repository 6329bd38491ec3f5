package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/store"
)

// A schedule with a one-second cron starts the digest at each slot under
// the id derived from the slot; each run completes with the digest of its
// day.
func TestDigestScheduled(t *testing.T) {
	e := hosttest.New(t, "./examples/digest", host.EvictIdle)
	ctx := context.Background()
	sc, err := e.Host.CreateSchedule(ctx, host.ScheduleOptions{Name: "daily", Cron: "* * * * * *", Module: "digest",
		Input: json.RawMessage(`{"feed":"releases","top":2}`), Overlap: store.OverlapAllow})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workflow != "digest" || len(sc.Next) != 3 || sc.Next[1].Sub(sc.Next[0]) != time.Second {
		t.Fatalf("created %+v: want workflow digest and 3 next slots a second apart", sc)
	}
	wctx, stop := context.WithTimeout(ctx, 2500*time.Millisecond)
	defer stop()
	if err := e.Host.Work(wctx, host.WorkOptions{Grace: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	got, err := e.Host.Schedule(ctx, "daily")
	if err != nil {
		t.Fatal(err)
	}
	if got.Fired < 2 || got.Missed != 0 {
		t.Fatalf("after 2.5s: fired %d, missed %d; want >= 2 and 0", got.Fired, got.Missed)
	}
	runs, err := e.Store.Runs(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(runs)) != got.Fired {
		t.Fatalf("%d runs, schedule fired %d", len(runs), got.Fired)
	}
	for _, r := range runs {
		slot, err := time.Parse(time.RFC3339, strings.TrimPrefix(r.ID, "sched:daily@"))
		if err != nil || r.ID != host.ScheduleRunID("daily", slot) {
			t.Fatalf("run id %q is not a slot's id: %v", r.ID, err)
		}
		r = e.Drive(r.ID) // ended already, or ends now
		var d digest
		if r.Status != store.RunCompleted || json.Unmarshal(r.Result, &d) != nil {
			t.Fatalf("run %s: %s %s %s", r.ID, r.Status, r.Result, r.Error)
		}
		if d.Day != slot.UTC().Format("2006-01-02") /* skein.Now is the slot */ || len(d.Entries) != 2 || !strings.HasPrefix(d.Text, "releases digest for "+d.Day) {
			t.Fatalf("run %s: digest %+v", r.ID, d)
		}
	}
}
