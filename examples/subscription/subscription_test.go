package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
	"github.com/skeinrun/skein/store"
)

// Forty monthly cycles run in virtual time under the checker as a chain of
// four runs (s1, s1~2, s1~3, s1~4): three continue as new after 12 cycles
// each, carrying the state in their successor's input, and the fourth
// completes after 4 more. No run's journal holds more than 24 records
// (a sleep and a charge per cycle), every run replays exactly from every
// crash point, and each successor starts where the virtual clock of its
// predecessor stood: 12 months later.
func TestSubscriptionCheck(t *testing.T) {
	start := time.Now()
	r := skeintest.Check(t, wasmbuild.Build(t, "./examples/subscription"), "subscription",
		`{"customer":"c-42","plan_cents":1200,"cycles":40}`, skeintest.Options{Schedules: 4, ScheduleIndependent: true})
	if len(r.Chain) != 4 {
		t.Fatalf("chain of %d runs %+v, want 4", len(r.Chain), r.Chain)
	}
	const bound = 2 * CyclesPerRun
	if r.LongestJournal > bound {
		t.Errorf("longest journal %d records, want at most %d", r.LongestJournal, bound)
	}
	for i, c := range r.Chain {
		wantID := "s1"
		if i > 0 {
			wantID = fmt.Sprintf("s1~%d", i+1)
		}
		var in, out State
		mustDecode(t, c.Input, &in)
		mustDecode(t, c.Result, &out)
		wantStatus, wantOut := store.RunContinued, 12*(i+1)
		if i == 3 {
			wantStatus, wantOut = store.RunCompleted, 40
		}
		if c.ID != wantID || c.Status != wantStatus || in.Cycle != 12*i || out.Cycle != wantOut ||
			out.BilledCents != 1200*wantOut || out.LastInvoice != fmt.Sprintf("c-42-%d", wantOut) ||
			in.Customer != "c-42" || in.Cycles != 40 {
			t.Errorf("run %d of the chain: %+v, want %s %s from cycle %d to %d", i+1, c, wantID, wantStatus, 12*i, wantOut)
		}
		if c.Journal != 2*(wantOut-12*i) || c.Journal > bound {
			t.Errorf("run %s journal %d records, want %d (≤ %d)", c.ID, c.Journal, 2*(wantOut-12*i), bound)
		}
		if i > 0 && c.Start.Sub(r.Chain[0].Start) < time.Duration(12*i)*Month {
			t.Errorf("run %s started %s after the first, want at least %d months of virtual time", c.ID, c.Start.Sub(r.Chain[0].Start), 12*i)
		}
		if i > 0 && c.Input != r.Chain[i-1].Result {
			t.Errorf("run %s input %s, want its predecessor's result %s", c.ID, c.Input, r.Chain[i-1].Result)
		}
	}
	if len(r.Ends) != 1 || r.Ends[0].Status != store.RunCompleted {
		t.Errorf("ends %+v, want every schedule completed", r.Ends)
	}
	t.Logf("40 cycles (%s of virtual time) checked in %s", 40*Month, time.Since(start).Round(time.Millisecond))
}

func mustDecode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
}
