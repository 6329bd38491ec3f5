package main

import (
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
	"github.com/skeinrun/skein/store"
)

// Live: attempts 1 and 2 fail, attempt 3 succeeds through the backup
// endpoint, in every eviction mode; the outcome records 3 attempts and
// the last attempt's error is gone.
func TestRetryFailsTwiceThenSucceeds(t *testing.T) {
	for _, evict := range []host.Evict{host.EvictNever, host.EvictIdle, host.EvictAlways} {
		t.Run(string(evict), func(t *testing.T) {
			r, outs := hosttest.Run(t, "./examples/retry", "charge", `{"card":"visa"}`, evict)
			if r.Status != store.RunCompleted || string(r.Result) != `"charged visa via backup"` {
				t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
			}
			if c := hosttest.Outcome(t, outs, "1"); c.Attempts != 3 || c.Status != store.OutcomeOK {
				t.Fatalf("charge-card: %d attempts, %s %q; want 3 attempts, ok", c.Attempts, c.Status, c.Error)
			}
		})
	}
	// A gateway that is never busy is charged at once, through the
	// primary endpoint.
	r, outs := hosttest.Run(t, "./examples/retry", "charge", `{"card":"visa","busy":-1}`, host.EvictNever)
	if string(r.Result) != `"charged visa via primary"` || hosttest.Outcome(t, outs, "1").Attempts != 1 {
		t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
	}
	// Busy past the policy's 5 attempts: the step fails with attempt 5's
	// error.
	r, _ = hosttest.Run(t, "./examples/retry", "charge", `{"card":"visa","busy":9}`, host.EvictNever)
	if r.Status != store.RunFailed || r.Error != "gateway busy (attempt 5, backup)" {
		t.Fatalf("run %s %s %q", r.Status, r.Result, r.Error)
	}
}

// The checker passes it: the same journal and end from every crash point
// of every schedule, a crash during an attempt included (the next attempt
// has the next number).
func TestRetryCheck(t *testing.T) {
	wasm := wasmbuild.Build(t, "./examples/retry")
	rep := skeintest.Check(t, wasm, "charge", `{"card":"visa"}`, skeintest.Options{Schedules: 100, ScheduleIndependent: true})
	if len(rep.Ends) != 1 || rep.Ends[0].Result != `"charged visa via backup"` {
		t.Fatalf("checked ends %+v", rep.Ends)
	}
}
