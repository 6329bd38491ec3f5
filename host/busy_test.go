package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// driveBounded drives a run like runToEnd but gives up after limit, so a
// run the host cannot stop fails the test instead of hanging it.
func (h *testHost) driveBounded(t *testing.T, m store.Module, workflow, id string, limit time.Duration, o StartOptions) store.Run {
	t.Helper()
	o.Module, o.Workflow, o.ID, o.Seed = m.Hash, workflow, id, 42
	if o.Input == nil {
		o.Input = json.RawMessage("null")
	}
	if _, err := h.Start(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	r, err := h.Drive(ctx, id, DriveOptions{WaitTimers: true})
	if ctx.Err() != nil {
		t.Fatalf("%s: still running after %s: the host could not stop it (%v)", id, limit, err)
	}
	if err != nil && !IsDivergence(err) {
		t.Fatal(err)
	}
	return r
}

// Loops that call the host without yielding to its scheduler (ctx.Err(),
// Outcomes, StepContext.Now in a body) are stopped by the no-yield limit:
// a host call that returns at once is not progress.
func TestLimitBusyHostCalls(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxRunWithoutYield: 300 * time.Millisecond})
	m := h.deploy(t, "./testdata/workflows/limits")
	check := goodRun(t, h, "good")
	for _, wf := range []string{"pollerr", "pollout", "bodynow"} {
		r := h.driveBounded(t, m, wf, wf, 10*time.Second, StartOptions{})
		wantLimit(t, h, r, "workflow code ran 300ms without yielding to the host (limit Config.MaxRunWithoutYield = 300ms; --max-run-without-yield)")
	}
	check()
}

// A cancellation reaches a run that never reaches an idle point: it is
// stopped within CancelGrace and ends canceled with the reason; what it
// recorded before stays.
func TestCancelBusyRun(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxRunWithoutYield: time.Minute})
	m := h.deploy(t, "./testdata/workflows/limits")
	for _, wf := range []string{"pollerr", "pollout", "bodynow", "spin"} {
		id := "cancel-" + wf
		time.AfterFunc(200*time.Millisecond, func() {
			if _, err := h.Cancel(context.Background(), id, "operator said stop"); err != nil {
				t.Errorf("cancel %s: %v", id, err)
			}
		})
		start := time.Now()
		r := h.driveBounded(t, m, wf, id, 10*time.Second, StartOptions{})
		if d := time.Since(start); d > 200*time.Millisecond+CancelGrace+2*time.Second {
			t.Errorf("%s: ended %s after start; the cancellation took longer than CancelGrace (%s)", wf, d, CancelGrace)
		}
		if r.Status != store.RunCanceled || !strings.Contains(r.Error, "operator said stop") || !strings.Contains(r.Error, "stopped") {
			t.Errorf("%s: %s %q, want canceled with the reason and that it was stopped", wf, r.Status, r.Error)
		}
		if wf != "bodynow" {
			if outs := h.outcomes(t, id); len(outs) != 1 || outs[0].Function != "before" || outs[0].Status != store.OutcomeOK {
				t.Errorf("%s outcomes: %v", wf, keysOf(outs))
			}
		}
	}
}

// A run timeout ends a busy run the same way.
func TestTimeoutBusyRun(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxRunWithoutYield: time.Minute})
	m := h.deploy(t, "./testdata/workflows/limits")
	r := h.driveBounded(t, m, "pollerr", "timeout-busy", 10*time.Second, StartOptions{Timeout: 300 * time.Millisecond})
	if r.Status != store.RunCanceled || !strings.Contains(r.Error, "run timed out after 300ms") {
		t.Errorf("%s %q, want canceled by the run timeout", r.Status, r.Error)
	}
}

// The wall-time and CPU-time limits of one execution.
func TestLimitExecutionTime(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever, MaxRunWithoutYield: time.Minute, MaxExecutionCPU: 400 * time.Millisecond})
	m := h.deploy(t, "./testdata/workflows/limits")
	// busy yields often but computes for 3 × 400 ms.
	r := h.driveBounded(t, m, "busy", "cpu", 10*time.Second, StartOptions{Input: json.RawMessage(`{"N":3,"MS":400}`)})
	wantLimit(t, h, r, "the execution ran workflow code for more than 400ms (limit Config.MaxExecutionCPU = 400ms; --max-execution-cpu)")

	h = newTestHost(t, Config{Evict: EvictNever, MaxRunWithoutYield: time.Minute, MaxExecutionTime: 500 * time.Millisecond})
	m = h.deploy(t, "./testdata/workflows/limits")
	r = h.driveBounded(t, m, "busy", "wall", 10*time.Second, StartOptions{Input: json.RawMessage(`{"N":3,"MS":400}`)})
	wantLimit(t, h, r, "the execution ran for more than 500ms (limit Config.MaxExecutionTime = 500ms; --max-execution-time)")
	// Time spent waiting (a 1 s step body sleep) counts for wall time, not CPU.
	h = newTestHost(t, Config{Evict: EvictNever, MaxExecutionCPU: 300 * time.Millisecond})
	m = h.deploy(t, "./testdata/workflows/limits")
	r = h.driveBounded(t, m, "nap", "nap", 10*time.Second, StartOptions{})
	if r.Status != store.RunCompleted {
		t.Errorf("nap: %s %q: waiting counted as CPU time", r.Status, r.Error)
	}
}
