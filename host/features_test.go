package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/store"
)

const featuresPkg = "./testdata/workflows/features"

func startRun(t *testing.T, h *testHost, m store.Module, workflow, input string, timeout time.Duration) store.Run {
	t.Helper()
	r, err := h.Start(context.Background(), StartOptions{Module: m.Hash, Workflow: workflow, Input: json.RawMessage(input), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func drive(t *testing.T, h *testHost, id string, o DriveOptions) store.Run {
	t.Helper()
	r, err := h.Drive(context.Background(), id, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func outcomeAt(t *testing.T, h *testHost, run, key string) store.Outcome {
	t.Helper()
	for _, o := range h.outcomes(t, run) {
		if o.Key == key {
			return o
		}
	}
	t.Fatalf("run %s has no outcome at %q", run, key)
	return store.Outcome{}
}

func TestCallRetry(t *testing.T) {
	h := newTestHost(t, Config{})
	m := h.deploy(t, featuresPkg)
	var calls atomic.Int32
	var infos []activity.Info
	h.RegisterActivity("busy-twice", func(ctx context.Context, in []byte) ([]byte, error) {
		if info, ok := activity.InfoFrom(ctx); ok {
			infos = append(infos, info) // attempts run one after another
		}
		if n := calls.Add(1); n <= 2 {
			return nil, fmt.Errorf("busy (call %d)", n)
		}
		return []byte(`"done"`), nil
	})
	h.RegisterActivity("fatal", func(ctx context.Context, in []byte) ([]byte, error) {
		return nil, errors.New("fatal: no such account")
	})
	h.RegisterActivity("wrapped", func(ctx context.Context, in []byte) ([]byte, error) {
		return nil, activity.NonRetryable(errors.New("declined"))
	})
	for _, tc := range []struct {
		activity string
		max      int
		status   store.RunStatus
		attempts int
		text     string
	}{
		{"busy-twice", 5, store.RunCompleted, 3, `"done"`},
		{"fatal", 5, store.RunFailed, 1, "fatal: no such account"},
		{"wrapped", 5, store.RunFailed, 1, "declined"},
		{"busy-twice", 2, store.RunFailed, 2, "busy (call 2)"},
	} {
		calls.Store(0)
		r := startRun(t, h, m, "call", fmt.Sprintf(`{"activity":%q,"max":%d}`, tc.activity, tc.max), 0)
		r = drive(t, h, r.ID, DriveOptions{WaitTimers: true})
		got := string(r.Result) + r.Error
		if r.Status != tc.status || got != tc.text {
			t.Errorf("%s max %d: %s %q, want %s %q", tc.activity, tc.max, r.Status, got, tc.status, tc.text)
		}
		if o := outcomeAt(t, h, r.ID, "1"); o.Attempts != tc.attempts {
			t.Errorf("%s max %d: %d attempts recorded, want %d", tc.activity, tc.max, o.Attempts, tc.attempts)
		}
		if tc.activity == "busy-twice" && tc.max == 5 {
			want := []activity.Info{}
			for n := 1; n <= 3; n++ {
				want = append(want, activity.Info{RunID: r.ID, Key: "1", Name: "busy-twice", Attempt: n, IdempotencyKey: r.ID + ".1"})
			}
			if fmt.Sprint(infos) != fmt.Sprint(want) {
				t.Errorf("activity infos %+v, want %+v", infos, want)
			}
		}
		infos = nil
	}
}

func TestCallTimeout(t *testing.T) {
	h := newTestHost(t, Config{})
	m := h.deploy(t, featuresPkg)
	h.RegisterActivity("hang", func(ctx context.Context, in []byte) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	r := startRun(t, h, m, "call", `{"activity":"hang","max":2,"timeout_ms":20}`, 0)
	r = drive(t, h, r.ID, DriveOptions{WaitTimers: true})
	if r.Status != store.RunFailed || !strings.Contains(r.Error, `activity "hang" timed out after 20ms (attempt 2)`) {
		t.Fatalf("%s %q", r.Status, r.Error)
	}
	if o := outcomeAt(t, h, r.ID, "1"); o.Attempts != 2 {
		t.Errorf("%d attempts, want 2", o.Attempts)
	}
}

// A process that stops during an activity's attempt does not reset the
// count: the next process runs the next attempt, and with no attempts
// left the call fails.
func TestCallAttemptsSurviveRestart(t *testing.T) {
	for _, tc := range []struct {
		max      int
		status   store.RunStatus
		attempts int
	}{
		{3, store.RunCompleted, 2}, // attempt 1 interrupted, attempt 2 succeeds
		{1, store.RunFailed, 1},    // attempt 1 interrupted, none left
		{0, store.RunCompleted, 2}, // no policy: the call runs again
	} {
		h := newTestHost(t, Config{})
		m := h.deploy(t, featuresPkg)
		started := make(chan struct{}, 4)
		var calls atomic.Int32
		h.RegisterActivity("slow", func(ctx context.Context, in []byte) ([]byte, error) {
			if calls.Add(1) == 1 {
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return []byte(`"fine"`), nil
		})
		r := startRun(t, h, m, "call", fmt.Sprintf(`{"activity":"slow","max":%d}`, tc.max), 0)
		ctx, stop := context.WithCancel(context.Background())
		go func() { <-started; stop() }()
		if _, err := h.Drive(ctx, r.ID, DriveOptions{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("max %d: interrupted drive: %v", tc.max, err)
		}
		if o := outcomeAt(t, h, r.ID, "1"); o.Status != store.OutcomePending || o.Attempts != 1 {
			t.Fatalf("max %d: after the stop: %+v", tc.max, o)
		}
		r = drive(t, h, r.ID, DriveOptions{WaitTimers: true})
		o := outcomeAt(t, h, r.ID, "1")
		if r.Status != tc.status || o.Attempts != tc.attempts {
			t.Errorf("max %d: %s %q with %d attempts, want %s with %d", tc.max, r.Status, string(r.Result)+r.Error, o.Attempts, tc.status, tc.attempts)
		}
	}
}

func TestStepRetry(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictAlways})
	m := h.deploy(t, featuresPkg)
	for _, tc := range []struct {
		input    string
		status   store.RunStatus
		text     string
		attempts int
	}{
		{`{"fail":2,"error":"flaky","max":5}`, store.RunCompleted, `"ok after 3"`, 3},
		{`{"fail":9,"error":"flaky","max":3}`, store.RunFailed, "flaky (attempt 3)", 3},
		{`{"fail":9,"error":"final","final":true,"max":3}`, store.RunFailed, "final (attempt 1)", 1},
		{`{"fail":0,"max":3,"timeout_ms":20,"sleep_ms":60}`, store.RunFailed, "step timed out", 3},
	} {
		r := startRun(t, h, m, "retrystep", tc.input, 0)
		r = drive(t, h, r.ID, DriveOptions{WaitTimers: true})
		got := string(r.Result) + r.Error
		if r.Status != tc.status || !strings.Contains(got, tc.text) {
			t.Errorf("%s: %s %q, want %s %q", tc.input, r.Status, got, tc.status, tc.text)
		}
		if o := outcomeAt(t, h, r.ID, "1"); o.Attempts != tc.attempts {
			t.Errorf("%s: %d attempts recorded, want %d", tc.input, o.Attempts, tc.attempts)
		}
		if rr, err := h.Replay(context.Background(), r.ID); err != nil || string(rr.Result)+rr.Error != got {
			t.Errorf("%s: replay %+v %v", tc.input, rr, err)
		}
	}
}

// A promise of a child run is settled by its full id, which holds the
// parent's id and the child op's key.
func TestChildPromise(t *testing.T) {
	h := newTestHost(t, Config{})
	m := h.deploy(t, featuresPkg)
	ctx := context.Background()
	r := startRun(t, h, m, "parent", `{"child":"waiter"}`, 0)
	r = drive(t, h, r.ID, DriveOptions{})
	if r.Status != store.RunSuspended {
		t.Fatalf("parent %s %s", r.Status, r.Error)
	}
	child, err := h.st.Run(ctx, r.ID+".1")
	if err != nil || child.Status != store.RunSuspended || child.Parent != r.ID {
		t.Fatalf("child %+v %v", child, err)
	}
	if err := h.Resolve(ctx, r.ID+".1.ok", json.RawMessage(`"yes"`), ""); err != nil {
		t.Fatal(err)
	}
	if c := drive(t, h, child.ID, DriveOptions{}); c.Status != store.RunCompleted {
		t.Fatalf("child %s %s", c.Status, c.Error)
	}
	r = drive(t, h, r.ID, DriveOptions{})
	if r.Status != store.RunCompleted || string(r.Result) != `"child said yes"` {
		t.Fatalf("parent %s %s %s", r.Status, r.Result, r.Error)
	}
}

func TestCancelCompensates(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictIdle, EvictAlways} {
		h := newTestHost(t, Config{Evict: evict})
		m := h.deploy(t, featuresPkg)
		r := startRun(t, h, m, "compensate", `null`, 0)
		done := make(chan store.Run, 1)
		go func() { done <- drive(t, h, r.ID, DriveOptions{}) }()
		if evict != EvictNever {
			if r = <-done; r.Status != store.RunSuspended {
				t.Fatalf("%s: %s %s", evict, r.Status, r.Error)
			}
		} else {
			waitFor(t, func() bool { return h.isActive(r.ID) && len(h.outcomes(t, r.ID)) > 0 })
		}
		if _, err := h.Cancel(context.Background(), r.ID, "stop"); err != nil {
			t.Fatal(err)
		}
		if evict != EvictNever {
			go func() { done <- drive(t, h, r.ID, DriveOptions{}) }()
		}
		r = <-done
		if r.Status != store.RunCanceled || string(r.Result) != `"undone: skein: canceled: stop"` || r.Error != "skein: canceled: stop" {
			t.Fatalf("%s: %s %s %q", evict, r.Status, r.Result, r.Error)
		}
	}
}

func TestCancelPropagatesToChild(t *testing.T) {
	h := newTestHost(t, Config{})
	m := h.deploy(t, featuresPkg)
	ctx := context.Background()
	r := startRun(t, h, m, "parent", `{"child":"sleeper","input":3600000}`, 0)
	if r = drive(t, h, r.ID, DriveOptions{}); r.Status != store.RunSuspended {
		t.Fatalf("parent %s", r.Status)
	}
	if _, err := h.Cancel(ctx, r.ID, "abort"); err != nil {
		t.Fatal(err)
	}
	r = drive(t, h, r.ID, DriveOptions{})
	// The parent's delivery of its cancellation cancels the child, whose
	// run this parent drives; the child ends canceled and so does the
	// parent, which returns the child's error.
	if r.Status != store.RunCanceled || !strings.Contains(r.Error, "abort") {
		t.Fatalf("parent %s %q", r.Status, r.Error)
	}
	waitFor(t, func() bool {
		c, err := h.st.Run(ctx, r.ID+".1")
		return err == nil && c.Cancel != ""
	})
	c := drive(t, h, r.ID+".1", DriveOptions{})
	if c.Status != store.RunCanceled || !strings.Contains(c.Error, "parent run canceled: abort") {
		t.Fatalf("child %s %q", c.Status, c.Error)
	}
}

func TestRunTimeout(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictIdle} {
		h := newTestHost(t, Config{Evict: evict})
		m := h.deploy(t, featuresPkg)
		r := startRun(t, h, m, "sleeper", `3600000`, 80*time.Millisecond)
		r = drive(t, h, r.ID, DriveOptions{})
		if evict == EvictIdle {
			if r.Status != store.RunSuspended {
				t.Fatalf("%s: %s", evict, r.Status)
			}
			time.Sleep(100 * time.Millisecond)
			due, err := h.st.DueRuns(context.Background(), time.Now().UnixNano(), 0)
			if err != nil || len(due) != 1 || due[0].ID != r.ID {
				t.Fatalf("%s: due runs after the deadline: %v %v", evict, runIDsOf(due), err)
			}
			r = drive(t, h, r.ID, DriveOptions{})
		}
		if r.Status != store.RunCanceled || !strings.Contains(r.Error, "run timed out after 80ms") {
			t.Fatalf("%s: %s %q", evict, r.Status, r.Error)
		}
	}
}

func runIDsOf(rs []store.Run) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Work drives new runs, wakes sleeping ones, delivers settlements and
// cancellations, and drives children; it stops when its context ends.
func TestWork(t *testing.T) {
	h := newTestHost(t, Config{IdleThreshold: time.Millisecond})
	m := h.deploy(t, featuresPkg)
	ctx, stop := context.WithCancel(context.Background())
	worked := make(chan error, 1)
	go func() { worked <- h.Work(ctx, WorkOptions{Poll: 20 * time.Millisecond}) }()
	sleeper := startRun(t, h, m, "sleeper", `50`, 0)
	waiter := startRun(t, h, m, "waiter", `null`, 0)
	parent := startRun(t, h, m, "parent", `{"child":"sleeper","input":30}`, 0)
	doomed := startRun(t, h, m, "compensate", `null`, 0)
	status := func(id string) store.RunStatus {
		r, err := h.st.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	waitFor(t, func() bool { return status(waiter.ID) == store.RunSuspended && status(doomed.ID) == store.RunSuspended })
	if err := h.Resolve(context.Background(), waiter.ID+".ok", json.RawMessage(`"hi"`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Cancel(context.Background(), doomed.ID, "bye"); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]store.RunStatus{sleeper.ID: store.RunCompleted, waiter.ID: store.RunCompleted,
		parent.ID: store.RunCompleted, doomed.ID: store.RunCanceled} {
		waitFor(t, func() bool { return status(id) == want })
	}
	if r, _ := h.st.Run(context.Background(), parent.ID); string(r.Result) != `"child said slept 30ms"` {
		t.Errorf("parent result %s", r.Result)
	}
	stop()
	select {
	case err := <-worked:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Work did not return after its context ended")
	}
}
