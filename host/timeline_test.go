package host

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/skeinrun/skein/store"
)

// attemptsOf returns the run's attempts at key.
func attemptsOf(t *testing.T, h *testHost, run, key string) []store.Attempt {
	t.Helper()
	all, err := h.st.Attempts(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Attempt
	for _, a := range all {
		if a.Key == key {
			out = append(out, a)
		}
	}
	return out
}

// checkAttempts checks that the attempts are numbered 1..n, each with a
// start and an end in order, one after the other, within the op's bar,
// and failed with the errors given ("" for the one that succeeded).
func checkAttempts(t *testing.T, what string, atts []store.Attempt, op store.Outcome, errs ...string) {
	t.Helper()
	if len(atts) != len(errs) {
		t.Fatalf("%s: %d attempts recorded, want %d: %+v", what, len(atts), len(errs), atts)
	}
	if op.StartedAt == 0 || op.SettledAt < op.StartedAt {
		t.Errorf("%s: the op's times: started %d, settled %d", what, op.StartedAt, op.SettledAt)
	}
	var last int64 = op.StartedAt
	for i, a := range atts {
		if a.N != i+1 || a.Error != errs[i] {
			t.Errorf("%s: attempt %d = %+v, want N %d, error %q", what, i, a, i+1, errs[i])
		}
		if a.Start < last || a.End < a.Start || a.End > op.SettledAt {
			t.Errorf("%s: attempt %d from %d to %d; the one before ended %d, the op settled %d", what, a.N, a.Start, a.End, last, op.SettledAt)
		}
		last = a.End
	}
}

// The tests here set no compile deadline (CompileTimeout -1): under -race
// on a loaded machine a first compile can take minutes.

// A step that fails twice and then succeeds has three attempts recorded,
// the first two with their errors, one after the other within the op's
// start and settlement, evicted or not.
func TestTimelineStepAttempts(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictAlways} {
		h := newTestHost(t, Config{Evict: evict, CompileTimeout: -1})
		m := h.deploy(t, featuresPkg)
		r := startRun(t, h, m, "retrystep", `{"fail":2,"error":"flaky","max":5}`, 0)
		r = drive(t, h, r.ID, DriveOptions{WaitTimers: true})
		if r.Status != store.RunCompleted {
			t.Fatalf("%s: %s %s", evict, r.Status, r.Error)
		}
		checkAttempts(t, fmt.Sprint(evict), attemptsOf(t, h, r.ID, "1"), outcomeAt(t, h, r.ID, "1"),
			"flaky (attempt 1)", "flaky (attempt 2)", "")
	}
}

// An activity call that fails twice and then succeeds has three attempts
// recorded, with the errors of the first two.
func TestTimelineCallAttempts(t *testing.T) {
	h := newTestHost(t, Config{CompileTimeout: -1})
	m := h.deploy(t, featuresPkg)
	var calls atomic.Int32
	h.RegisterActivity("flaky", func(ctx context.Context, in []byte) ([]byte, error) {
		if n := calls.Add(1); n <= 2 {
			return nil, fmt.Errorf("down (call %d)", n)
		}
		return []byte(`"up"`), nil
	})
	r := startRun(t, h, m, "call", `{"activity":"flaky","max":5}`, 0)
	r = drive(t, h, r.ID, DriveOptions{WaitTimers: true})
	if r.Status != store.RunCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	checkAttempts(t, "call", attemptsOf(t, h, r.ID, "1"), outcomeAt(t, h, r.ID, "1"), "down (call 1)", "down (call 2)", "")
}

// A run evicted at an idle point records the drop and the replay; the
// replay does not move the start of the op the first execution issued.
func TestTimelineIdleDrop(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictAlways, CompileTimeout: -1})
	m := h.deploy(t, featuresPkg)
	r := startRun(t, h, m, "sleeper", `30`, 0)
	r = drive(t, h, r.ID, DriveOptions{WaitTimers: true})
	if r.Status != store.RunCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	drops := attemptsOf(t, h, r.ID, store.IdleKey)
	if len(drops) != 1 || drops[0].N != 0 || drops[0].Start == 0 || drops[0].End < drops[0].Start {
		t.Fatalf("drops %+v, want one at 0 settled records, dropped then replayed", drops)
	}
	sleep := outcomeAt(t, h, r.ID, "1")
	if sleep.StartedAt == 0 || sleep.StartedAt > drops[0].Start {
		t.Errorf("the sleep started at %d, after the instance that issued it was dropped (%d): the replay moved it", sleep.StartedAt, drops[0].Start)
	}
	if sleep.SettledAt < drops[0].End {
		t.Errorf("the sleep settled at %d, before the replay that delivered it began (%d)", sleep.SettledAt, drops[0].End)
	}
	if _, err := h.Replay(context.Background(), r.ID); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("replay: %v", err)
	}
}
