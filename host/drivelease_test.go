package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// openSQLite opens a new SQLite file for a test.
func openSQLite(t *testing.T) *sqlite.DB {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newLeaseHost is a host on st counting step bodies in c.
func newLeaseHost(t *testing.T, st store.Store, c *counters, log *syncBuffer) *Host {
	t.Helper()
	cfg := Config{Store: st, CacheDir: cacheDir}
	if log != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	h, err := newHost(context.Background(), cfg, withTestDefaults(testHooks{onBody: c.body}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// TestDriveLeaseHeld: Drive does not execute a run another worker holds:
// at once it fails with a LeaseHeldError naming the holder and records
// nothing; with LeaseWait it waits until the holder lets go, then drives
// the run under a lease of its own, which the run's last commit releases.
// A run that has ended is returned without a lease.
func TestDriveLeaseHeld(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	c := &counters{bodies: map[string]int{}}
	h := newLeaseHost(t, st, c, nil)
	run := startChain(t, h, "held", 3)
	other, err := st.ClaimRun(ctx, run.ID, "other", time.Now().UnixNano(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	_, err = h.Drive(ctx, run.ID, DriveOptions{})
	var held *store.LeaseHeldError
	if !errors.Is(err, store.ErrLeaseHeld) || !errors.As(err, &held) || held.Lease != other.Lease ||
		!strings.Contains(err.Error(), `run held is being executed by worker "other"`) {
		t.Fatalf("Drive of a held run: %v; want a LeaseHeldError naming %+v", err, other.Lease)
	}
	if r, _ := st.Run(ctx, run.ID); r.Status != store.RunPending || len(c.bodies) != 0 {
		t.Fatalf("after the refused Drive: run %s, bodies %v; want pending, none", r.Status, c.bodies)
	}

	var waits []store.Lease
	time.AfterFunc(300*time.Millisecond, func() { st.ReleaseLease(ctx, other.Lease) })
	start := time.Now()
	r, err := h.Drive(ctx, run.ID, DriveOptions{Owner: "driver", LeaseWait: 10 * time.Second,
		OnLeaseWait: func(l store.Lease) { waits = append(waits, l) }})
	if err != nil || r.Status != store.RunCompleted || string(r.Result) != "6" {
		t.Fatalf("Drive with a wait: %s %s, %v; want completed with 6", r.Status, r.Result, err)
	}
	if time.Since(start) < 300*time.Millisecond || len(waits) != 1 || waits[0] != other.Lease {
		t.Errorf("Drive returned after %v having been told of %+v; want one wait of >= 300ms for %+v", time.Since(start), waits, other.Lease)
	}
	hist, err := st.LeaseHistory(ctx, run.ID)
	if err != nil || len(hist) != 2 || hist[1].Owner != "driver" || hist[1].ReleasedAt == 0 {
		t.Fatalf("lease history %+v, %v; want other's, then driver's (released)", hist, err)
	}
	if got := mustRunStatus(t, st, run.ID); got.LeaseOwner != "" {
		t.Errorf("lease owner after the drive: %q; want none", got.LeaseOwner)
	}

	// An ended run: returned as stored, no lease taken, nothing executed.
	bodies := c.total()
	r, err = h.Drive(ctx, run.ID, DriveOptions{})
	if err != nil || r.Status != store.RunCompleted || c.total() != bodies {
		t.Errorf("Drive of a completed run: %s, %v, %d more bodies", r.Status, err, c.total()-bodies)
	}
	if h2, _ := st.LeaseHistory(ctx, run.ID); len(h2) != 2 {
		t.Errorf("Drive of a completed run took a lease: %+v", h2)
	}
}

func mustRunStatus(t *testing.T, st store.Store, id string) store.Run {
	t.Helper()
	r, err := st.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (c *counters) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.bodies {
		n += v
	}
	return n
}

// TestDriveTwoHosts: two hosts on one store Drive the same run at once.
// One executes it; the other waits for its lease and returns the run as
// stored. Every step body executes once in all.
func TestDriveTwoHosts(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	ca, cb := &counters{bodies: map[string]int{}}, &counters{bodies: map[string]int{}}
	a, b := newLeaseHost(t, st, ca, nil), newLeaseHost(t, st, cb, nil)
	const n = 5
	run := startChain(t, a, "twice", n)
	var wg sync.WaitGroup
	var ra, rb store.Run
	var ea, eb error
	wg.Go(func() { ra, ea = a.Drive(ctx, run.ID, DriveOptions{LeaseWait: 20 * time.Second}) })
	wg.Go(func() { rb, eb = b.Drive(ctx, run.ID, DriveOptions{LeaseWait: 20 * time.Second}) })
	wg.Wait()
	want := fmt.Sprint(n * (n + 1) / 2)
	if ea != nil || eb != nil || ra.Status != store.RunCompleted || rb.Status != store.RunCompleted ||
		string(ra.Result) != want || string(rb.Result) != want {
		t.Fatalf("drives: %s %s %v / %s %s %v; want both completed with %s", ra.Status, ra.Result, ea, rb.Status, rb.Result, eb, want)
	}
	for i := 1; i <= n; i++ {
		k := fmt.Sprintf("%s/%d", run.ID, i)
		if got := ca.bodies[k] + cb.bodies[k]; got != 1 {
			t.Errorf("body of step %d executed %d times (a %d, b %d); want once", i, got, ca.bodies[k], cb.bodies[k])
		}
	}
}

// TestDriveChildLeases: the children a Drive runs in this process are
// executed under leases of their own, by the same owner.
func TestDriveChildLeases(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	h := newLeaseHost(t, st, &counters{bodies: map[string]int{}}, nil)
	startChain(t, h, "unused", 1) // deploys the module
	run, err := h.Start(ctx, StartOptions{Module: "server", Workflow: "parent", Input: []byte("7"), ID: "fam"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.Drive(ctx, run.ID, DriveOptions{Owner: "driver", WaitTimers: true})
	if err != nil || r.Status != store.RunCompleted || string(r.Result) != "50" {
		t.Fatalf("Drive(parent): %s %s %v; want completed with 50", r.Status, r.Result, err)
	}
	kids, err := st.Runs(ctx, store.RunFilter{After: "fam"})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, k := range kids {
		if k.Parent != "fam" {
			continue
		}
		found++
		hist, err := st.LeaseHistory(ctx, k.ID)
		if err != nil || len(hist) == 0 || hist[0].Owner != "driver" || hist[len(hist)-1].ReleasedAt == 0 || k.LeaseOwner != "" {
			t.Errorf("child %s (%s): lease history %+v, %v, owner now %q; want driver's leases, released", k.ID, k.Status, hist, err, k.LeaseOwner)
		}
	}
	if found != 1 {
		t.Errorf("found %d children of fam; want 1", found)
	}
}

// TestResumeUnderLease: Resume changes nothing of a run another worker
// holds, and never resumes a completed run.
func TestResumeUnderLease(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	h := newLeaseHost(t, st, &counters{bodies: map[string]int{}}, nil)
	startChain(t, h, "unused", 1)
	run, err := h.Start(ctx, StartOptions{Module: "server", Workflow: "waiter", Input: []byte("{}"), ID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := h.Drive(ctx, run.ID, DriveOptions{}); err != nil || r.Status != store.RunSuspended {
		t.Fatalf("Drive(waiter): %s, %v; want suspended", r.Status, err)
	}
	other, err := st.ClaimRun(ctx, run.ID, "other", time.Now().UnixNano(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := mustRunStatus(t, st, run.ID)
	if _, err := h.Resume(ctx, run.ID, "", DriveOptions{}); !errors.Is(err, store.ErrLeaseHeld) {
		t.Errorf("Resume of a held run: %v; want ErrLeaseHeld", err)
	}
	if after := mustRunStatus(t, st, run.ID); after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("Resume of a held run changed it: %+v -> %+v", before, after)
	}
	st.ReleaseLease(ctx, other.Lease)

	done := startChain(t, h, "done", 1)
	if r, err := h.Drive(ctx, done.ID, DriveOptions{}); err != nil || r.Status != store.RunCompleted {
		t.Fatalf("Drive(chain): %s, %v", r.Status, err)
	}
	if _, err := h.Resume(ctx, done.ID, "", DriveOptions{}); err == nil || !strings.Contains(err.Error(), "the run is completed") || !errors.Is(err, ErrTerminal) {
		t.Errorf("Resume of a completed run: %v; want an error matching ErrTerminal", err)
	}
}

// failingStore fails every commit that writes run id while fail is set,
// as a full disk would.
type failingStore struct {
	store.Store
	id      string
	fail    atomic.Bool
	commits atomic.Int64 // commits of run id refused
}

func (s *failingStore) Commit(ctx context.Context, b store.Batch) error {
	if s.fail.Load() {
		for _, r := range b.Runs {
			if r.ID == s.id {
				s.commits.Add(1)
				return fmt.Errorf("simulated: %w", store.ErrFull)
			}
		}
	}
	return s.Store.Commit(ctx, b)
}

// TestWorkBacksOff: a run whose commits fail is driven again after a
// backoff that doubles with each failure (the worker keeps its lease that
// long), not at once in a loop; each failure is logged once with the
// backoff; once commits work again the run completes.
func TestWorkBacksOff(t *testing.T) {
	ctx := context.Background()
	fs := &failingStore{Store: openSQLite(t), id: "stuck"}
	fs.fail.Store(true)
	var log syncBuffer
	h := newLeaseHost(t, fs, &counters{bodies: map[string]int{}}, &log)
	startChain(t, h, "stuck", 2)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- h.Work(wctx, WorkOptions{Poll: 10 * time.Millisecond, RetryBackoff: 100 * time.Millisecond, MaxRetryBackoff: 400 * time.Millisecond, Grace: time.Second})
	}()
	defer func() { stop(); <-done }()
	time.Sleep(2 * time.Second)
	// Failures at about 0, 0.1, 0.3, 0.7, 1.1, 1.5, 1.9 s: 7; without a
	// backoff, hundreds.
	n := fs.commits.Load()
	if n < 4 || n > 9 {
		t.Errorf("%d failed drives in 2s with a backoff of 100ms doubling up to 400ms; want about 7", n)
	}
	lines := strings.Count(log.String(), "drive run failed")
	if int64(lines) != n || !strings.Contains(log.String(), "retry_in=400ms") || !strings.Contains(log.String(), "retry_in=200ms") {
		t.Errorf("%d log lines for %d failures; want one each, with its backoff:\n%s", lines, n, log.String())
	}
	if got := h.metrics.NS("").DriveFailures.Load(); int64(got) != n {
		t.Errorf("skein_drive_failures_total %d; want %d", got, n)
	}
	fs.fail.Store(false)
	waitFor(t, func() bool { return mustRunStatus(t, fs, "stuck").Status == store.RunCompleted })
}
