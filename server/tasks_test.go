package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
	"github.com/skeinrun/skein/worker"
)

// TestWorkersInProcess runs the worker protocol end to end in one process
// (so that `go test -race` covers the host, the server and package worker
// together): two workers share the calls of 30 runs, a call whose first
// attempt fails is retried, and every run completes with its result.
func TestWorkersInProcess(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cache := testcache.Shared()
	// No compile deadline: under -race on a loaded machine a first compile
	// can take minutes.
	h, err := host.New(ctx, host.Config{Store: st, RemoteActivities: true, CacheDir: cache, CompileTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWork := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- h.Work(wctx, host.WorkOptions{Poll: 20 * time.Millisecond}) }()
	srv := httptest.NewServer(New(h, Options{Stop: wctx}))
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/remote"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(ctx, "remote", wasm)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	ran := map[string]int{} // run.key#attempt -> executions
	flakyFailed := map[string]bool{}
	wctx2, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, id := range []string{"w1", "w2"} {
		w, err := worker.New(worker.Options{Server: srv.URL, Identity: id, Concurrency: 4, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		count := func(ctx context.Context) activity.Info {
			i, _ := activity.InfoFrom(ctx)
			mu.Lock()
			defer mu.Unlock()
			ran[fmt.Sprintf("%s#%d", i.IdempotencyKey, i.Attempt)]++
			return i
		}
		w.Register("echo", func(ctx context.Context, in []byte) ([]byte, error) {
			count(ctx)
			return in, nil
		})
		w.Register("flaky", activity.Typed(func(ctx context.Context, n int) (int, error) {
			i := count(ctx)
			mu.Lock()
			defer mu.Unlock()
			if !flakyFailed[i.IdempotencyKey] {
				flakyFailed[i.IdempotencyKey] = true
				return 0, errors.New("the first attempt fails")
			}
			return n, nil
		}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx2); err != nil {
				t.Errorf("worker %s: %v", id, err)
			}
		}()
	}
	t.Cleanup(func() {
		stopWorkers()
		wg.Wait()
		stopWork()
		<-worked
		srv.Close()
		h.Close(ctx)
		st.Close()
	})

	var ids []string
	for i := range 30 {
		name, in := "echo", `{"n":5,"name":"echo","parallel":true}`
		if i%3 == 0 {
			name, in = "flaky", `{"n":2,"name":"flaky","attempts":3}`
		}
		r, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: "calls", Input: json.RawMessage(in), ID: fmt.Sprintf("%s-%d", name, i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, id := range ids {
		r, err := h.Await(actx, id)
		if err != nil {
			t.Fatalf("await %s: %v", id, err)
		}
		want := map[bool]string{true: "1", false: "10"}[id[0] == 'f']
		if r.Status != store.RunCompleted || string(r.Result) != want {
			t.Errorf("run %s: %s %s %q; want completed with %s", id, r.Status, r.Result, r.Error, want)
		}
		_, outs, err := h.Inspect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			if wantAttempts := map[bool]int{true: 2, false: 1}[id[0] == 'f']; o.Attempts != wantAttempts {
				t.Errorf("run %s op %s: %d attempts, want %d", id, o.Key, o.Attempts, wantAttempts)
			}
		}
		checkTimelineJSON(t, srv.URL, id, id[0] == 'f')
	}
	var metrics strings.Builder
	if err := h.WriteMetrics(ctx, &metrics); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`skein_tasks_total{event="claimed",namespace="default"} 140`, `skein_tasks_total{event="completed",namespace="default"} 120`,
		`skein_tasks_total{event="failed",namespace="default"} 20`, `skein_tasks_total{event="timed_out",namespace="default"} 0`} {
		if !strings.Contains(metrics.String(), line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if strings.Contains(metrics.String(), "skein_task_queue{") {
		t.Errorf("/metrics shows task queues with every task ended:\n%s", metrics.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range ran {
		if n != 1 {
			t.Errorf("attempt %s ran %d times; want once", k, n)
		}
	}
	if len(ran) != 20*5+10*2*2 {
		t.Errorf("%d attempts ran; want %d", len(ran), 20*5+10*2*2)
	}
}
