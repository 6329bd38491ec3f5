package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/worker"
)

// contractActivity is one activity, written once against package
// activity, that TestActivityServedInProcessAndByWorker serves from an
// embedded host and from a worker. Under the name "settle" its first
// attempt of each call fails (retryable) and its second returns the
// input plus one; under "refuse" it fails with a NonRetryable error. It
// checks the Info of each attempt and records "name key attempt".
type contractActivity struct {
	mu       sync.Mutex
	attempts []string
	bad      []string // attempts whose Info was wrong
}

func (c *contractActivity) fn() activity.Func {
	return activity.Typed(func(ctx context.Context, n int) (int, error) {
		i, ok := activity.InfoFrom(ctx)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.attempts = append(c.attempts, fmt.Sprintf("%s %s %d", i.Name, i.Key, i.Attempt))
		if !ok || i.RunID == "" || i.IdempotencyKey != i.RunID+"."+i.Key {
			c.bad = append(c.bad, fmt.Sprintf("%+v (found %v)", i, ok))
		}
		switch {
		case i.Name == "refuse":
			return 0, activity.NonRetryable(errors.New("refused: no retry"))
		case i.Attempt < 2:
			return 0, fmt.Errorf("busy (attempt %d)", i.Attempt)
		}
		return n + 1, nil
	})
}

// check asserts the attempts the activity saw: each "settle" call twice,
// the "refuse" call once (its NonRetryable error ended the retries).
func (c *contractActivity) check(t *testing.T, where string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	want := []string{"settle 1 1", "settle 1 2", "settle 2 1", "settle 2 2", "refuse 1 1"}
	if fmt.Sprint(c.attempts) != fmt.Sprint(want) || len(c.bad) > 0 {
		t.Errorf("%s: attempts %q, want %q; wrong Info: %q", where, c.attempts, want, c.bad)
	}
}

// The calls the tests make: two "settle" calls of three attempts each
// (each succeeds on its second), then one "refuse" call of three.
const (
	settleCalls = `{"n":2,"name":"settle","attempts":3}`
	refuseCall  = `{"n":1,"name":"refuse","attempts":3}`
)

// TestActivityServedInProcessAndByWorker: one activity.Func serves the
// same workflow registered in an embedded host and in a worker of a real
// skein serve. Both give it the call's Info (run, key, name, attempt,
// idempotency key), retry its plain errors by the call's policy, and end
// the retries at once on its activity.NonRetryable error.
func TestActivityServedInProcessAndByWorker(t *testing.T) {
	t.Run("embedded host", func(t *testing.T) {
		var c contractActivity
		e := hosttest.New(t, remoteWorkflows, host.EvictNever)
		e.Host.RegisterActivity("settle", c.fn())
		e.Host.RegisterActivity("refuse", c.fn())
		r := e.Drive(e.Start("calls", settleCalls).ID)
		if r.Status != "completed" || string(r.Result) != "3" {
			t.Fatalf("settle run: %s %s %q; want completed with 3", r.Status, r.Result, r.Error)
		}
		r = e.Drive(e.Start("calls", refuseCall).ID)
		if r.Status != "failed" || r.Error != "refused: no retry" {
			t.Fatalf("refuse run: %s %q; want failed with the activity's error", r.Status, r.Error)
		}
		_, outs, err := e.Host.Inspect(context.Background(), r.ID)
		if err != nil || len(outs) != 1 || outs[0].Attempts != 1 {
			t.Errorf("refuse run outcomes %+v (%v); want one call of 1 attempt", outs, err)
		}
		c.check(t, "embedded host")
	})
	t.Run("worker", func(t *testing.T) {
		var c contractActivity
		s := startServer(t, filepath.Join(t.TempDir(), "c.db"), nil)
		startRemote(t, s, "", settleCalls, "c-settle")
		w, err := worker.New(worker.Options{Server: s.url, Identity: "contract", Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		w.Register("settle", c.fn())
		w.Register("refuse", c.fn())
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- w.Run(ctx) }()
		defer func() { stop(); <-ran }()
		run := s.awaitStatus(t, "c-settle", "", "completed", "failed")
		if run.Status != "completed" || string(run.Result) != "3" {
			t.Fatalf("settle run: %s %s %q; want completed with 3", run.Status, run.Result, run.Error)
		}
		r := s.call(t, "POST", "/v1/runs", "", map[string]any{"module": "remote", "id": "c-refuse", "input": json.RawMessage(refuseCall)})
		want(t, "start c-refuse", r, 201, "")
		run = s.awaitStatus(t, "c-refuse", "", "completed", "failed")
		if run.Status != "failed" || run.Error != "refused: no retry" {
			t.Fatalf("refuse run: %s %q; want failed with the activity's error", run.Status, run.Error)
		}
		if outs := s.outcomes(t, "c-refuse", "").Outcomes; len(outs) != 1 || outs[0].Attempts != 1 {
			t.Errorf("refuse run outcomes %+v; want one call of 1 attempt", outs)
		}
		c.check(t, "worker")
	})
}
