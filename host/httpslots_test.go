package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// TestHTTPActivityConcurrency: two runs that each start many calls at
// once never have more than HTTPMaxConcurrentPerRun requests in progress
// each, nor more than HTTPMaxConcurrent in all; the others wait, and all
// complete. The slots of a run are dropped once it has no request left.
func TestHTTPActivityConcurrency(t *testing.T) {
	const perRun, all, calls = 3, 4, 12
	var mu sync.Mutex
	inFlight, maxAll, byRun, maxRun := 0, 0, map[string]int{}, 0
	srv := newHTTPServer(t, map[string]http.HandlerFunc{"/": func(w http.ResponseWriter, r *http.Request) {
		run := strings.TrimPrefix(r.URL.Path, "/")
		mu.Lock()
		inFlight++
		byRun[run]++
		maxAll, maxRun = max(maxAll, inFlight), max(maxRun, byRun[run])
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // so that requests overlap
		mu.Lock()
		inFlight--
		byRun[run]--
		mu.Unlock()
	}})
	h := newTestHost(t, Config{HTTPAllow: []string{srv.addr}, HTTPMaxConcurrentPerRun: perRun, HTTPMaxConcurrent: all})
	m := h.deploy(t, httpcallPkg)
	var runs []store.Run
	for i := range 2 {
		runs = append(runs, startRun(t, h, m, "fanout", fmt.Sprintf(`{"url":%q,"n":%d}`, srv.URL+fmt.Sprintf("/r%d", i), calls), 0))
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			got := drive(t, h, r.ID, DriveOptions{WaitTimers: true})
			if got.Status != store.RunCompleted || string(got.Result) != fmt.Sprintf(`{"ok":%d}`, calls) {
				t.Errorf("run %s: %s %s %s", r.ID, got.Status, got.Result, got.Error)
			}
		})
	}
	wg.Wait()
	if maxAll > all || maxRun > perRun {
		t.Errorf("%d requests at once, %d of one run; want at most %d and %d", maxAll, maxRun, all, perRun)
	}
	h.httpSlots.mu.Lock()
	defer h.httpSlots.mu.Unlock()
	if n := len(h.httpSlots.runs); n != 0 {
		t.Errorf("%d runs still hold request slots", n)
	}
}

// TestHTTPSlotsWait: a request waiting for a slot gives up when its
// context ends, naming the bound it waited for, and gives back what it
// held; the slots it waited for then serve the next.
func TestHTTPSlotsWait(t *testing.T) {
	cfg := Config{HTTPMaxConcurrentPerRun: 1, HTTPMaxConcurrent: 2, LimitHint: func(f string) string { return "--" + f }}
	cfg.setHTTPDefaults()
	s := newHTTPSlots(&cfg)
	ctx := context.Background()
	release, err := s.acquire(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = s.acquire(short, "r1")
	want := `activity "skein.http": waiting for a request slot for the run (Config.HTTPMaxConcurrentPerRun = 1; --HTTPMaxConcurrentPerRun): context deadline exceeded`
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("per run: %v\nwant %s", err, want)
	}
	r2, err := s.acquire(ctx, "r2")
	if err != nil {
		t.Fatal(err)
	}
	short2, cancel2 := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel2()
	_, err = s.acquire(short2, "r3") // its run's slot is free, the process's are not
	want = `activity "skein.http": waiting for a request slot in this process (Config.HTTPMaxConcurrent = 2; --HTTPMaxConcurrent): context deadline exceeded`
	if err == nil || err.Error() != want {
		t.Errorf("in all: %v\nwant %s", err, want)
	}
	release()
	r3, err := s.acquire(ctx, "r3")
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	r2()
	r3()
	if len(s.runs) != 0 || len(s.all) != 0 {
		t.Errorf("after all released: %d runs, %d slots held", len(s.runs), len(s.all))
	}
}
