package main

import (
	"slices"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
	"github.com/skeinrun/skein/store"
)

func TestSagaCompensatesInReverse(t *testing.T) {
	for _, evict := range []host.Evict{host.EvictNever, host.EvictAlways} {
		t.Run(string(evict), func(t *testing.T) {
			r, outs := hosttest.Run(t, "./examples/saga", "saga", `{"trip":"lisbon","card":"declined"}`, evict)
			want := "charge-card failed: card declined; compensated: undid reserve-hotel, undid reserve-flight"
			if r.Status != store.RunFailed || r.Error != want {
				t.Fatalf("run %s %q, want failed %q", r.Status, r.Error, want)
			}
			var fns []string
			for _, o := range outs {
				fns = append(fns, o.Function)
			}
			if !slices.Equal(fns, []string{"reserve-flight", "reserve-hotel", "charge-card", "cancel-hotel", "cancel-flight"}) {
				t.Fatalf("outcomes in settle order: %q", fns)
			}
			if c := hosttest.Outcome(t, outs, "3"); c.Attempts != 3 || c.Status != store.OutcomeError {
				t.Errorf("charge-card: %d attempts, %s; want 3 attempts, error", c.Attempts, c.Status)
			}
		})
	}
}

func TestSagaBooks(t *testing.T) {
	r, outs := hosttest.Run(t, "./examples/saga", "saga", `{"trip":"oslo","card":"visa"}`, host.EvictIdle)
	if r.Status != store.RunCompleted || string(r.Result) != `"flight for oslo; hotel for oslo; charged visa"` {
		t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
	}
	if c := hosttest.Outcome(t, outs, "3"); c.Attempts != 1 {
		t.Errorf("charge-card took %d attempts, want 1", c.Attempts)
	}
}

// The retried charge and the compensations replay exactly from every crash
// point, whatever the schedule.
func TestSagaCheck(t *testing.T) {
	wasm := wasmbuild.Build(t, "./examples/saga")
	for _, in := range []string{`{"trip":"lisbon","card":"declined"}`, `{"trip":"oslo","card":"visa"}`} {
		skeintest.Check(t, wasm, "saga", in, skeintest.Options{Schedules: 100, ScheduleIndependent: true})
	}
}
