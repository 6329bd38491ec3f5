package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// partitionStore is a store whose lease renewals fail once cut is set,
// and its claims too when claims is set, as if the worker had lost its
// way to the database for a while; its other calls still go through, as
// when the network comes back just before a commit.
type partitionStore struct {
	store.Store
	cut, claims atomic.Bool
}

var errPartition = errors.New("dial tcp 127.0.0.1:5432: connection refused (simulated partition)")

func (s *partitionStore) RenewLease(ctx context.Context, l store.Lease, expiry int64) error {
	if s.cut.Load() {
		return errPartition
	}
	return s.Store.RenewLease(ctx, l, expiry)
}

func (s *partitionStore) ClaimRuns(ctx context.Context, owner string, now int64, ttl time.Duration, limit int) ([]store.ClaimedRun, error) {
	if s.cut.Load() && s.claims.Load() {
		return nil, errPartition
	}
	return s.Store.ClaimRuns(ctx, owner, now, ttl, limit)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (a log sink).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startChain deploys the server workflows through h and starts run id
// of the chain workflow: n steps whose bodies take 100 ms each.
func startChain(t *testing.T, h *Host, id string, n int) store.Run {
	t.Helper()
	ctx := context.Background()
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/server"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(ctx, "server", wasm)
	if err != nil {
		t.Fatal(err)
	}
	run, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "chain", Input: json.RawMessage(fmt.Sprintf(`{"n":%d,"ms":100}`, n)), ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestLeaseTakeover: worker A drives a long run until its lease renewals
// start to fail (a partition); once the lease has expired worker B, on
// the same store, claims the run and finishes it from its journal. A's
// next commit carries its stale lease and is refused: A stops driving,
// records nothing more, and counts the lost lease. The run completes once,
// with the right result, and its lease history shows A's lease ended
// before B's began.
func TestLeaseTakeover(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps := &partitionStore{Store: st}
	ps.claims.Store(true)
	bodiesA, bodiesB := &counters{bodies: map[string]int{}}, &counters{bodies: map[string]int{}}
	var logA syncBuffer
	a, err := newHost(ctx, Config{Store: ps, CacheDir: cacheDir,
		Logger: slog.New(slog.NewTextHandler(&logA, nil))}, withTestDefaults(testHooks{onBody: bodiesA.body}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := newHost(ctx, Config{Store: st, CacheDir: cacheDir}, withTestDefaults(testHooks{onBody: bodiesB.body}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)

	const n, ttl = 20, 400 * time.Millisecond
	run := startChain(t, a, "long", n)

	work := func(h *Host, owner string) (stop func()) {
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- h.Work(wctx, WorkOptions{Owner: owner, LeaseTTL: ttl, Poll: 20 * time.Millisecond, Grace: time.Second})
		}()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker %s: %v", owner, err)
			}
		}
	}
	stopA := work(a, "A")
	defer stopA()
	outcomes := func() int {
		os, err := st.Outcomes(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(os)
	}
	waitFor(t, func() bool { return outcomes() >= 3 })
	ps.cut.Store(true)
	cutAt := time.Now()
	stopB := work(b, "B")
	defer stopB()

	var final store.Run
	waitFor(t, func() bool {
		final, err = st.Run(ctx, run.ID)
		return err == nil && final.Status.Terminal()
	})
	if final.Status != store.RunCompleted || string(final.Result) != fmt.Sprint(n*(n+1)/2) {
		t.Fatalf("run %s %q %s; want completed with %d", final.Status, final.Error, final.Result, n*(n+1)/2)
	}
	for i := 0; i < 1000 && a.metrics.NS("").LeasesLost.Load() == 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if a.metrics.NS("").LeasesLost.Load() != 1 {
		h, _ := st.LeaseHistory(ctx, run.ID)
		t.Fatalf("worker A lost %d leases; want 1\nhistory %+v\n%s", a.metrics.NS("").LeasesLost.Load(), h, logA.String())
	}
	if !strings.Contains(logA.String(), "lease lost") {
		t.Errorf("worker A did not log the lost lease:\n%s", logA.String())
	}
	if a.isActive(run.ID) {
		t.Error("worker A still drives the run after losing its lease")
	}
	waitFor(t, func() bool { return b.metrics.NS("").Ended[3].Load() > 0 }) // counted just after the commit
	if ea, eb := a.metrics.NS("").Ended[3].Load(), b.metrics.NS("").Ended[3].Load(); ea != 0 || eb != 1 {
		t.Errorf("runs completed by A, B: %d, %d; want 0, 1 (once, by the new holder)", ea, eb)
	}

	hist, err := st.LeaseHistory(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) < 2 || hist[0].Owner != "A" || hist[len(hist)-1].Owner != "B" {
		t.Fatalf("lease history %+v; want A's lease, then B's", hist)
	}
	for i := 1; i < len(hist); i++ {
		if prev, next := hist[i-1], hist[i]; next.ClaimedAt < prev.End() {
			t.Errorf("lease %d (%s) claimed at %d, before lease %d (%s) ended at %d", next.Token, next.Owner, next.ClaimedAt, prev.Token, prev.Owner, prev.End())
		}
	}
	t.Logf("B claimed the run %s after the partition (TTL %s)", time.Unix(0, hist[len(hist)-1].ClaimedAt).Sub(cutAt).Round(time.Millisecond), ttl)

	// Every step's value is the one the workflow computes, and a step body
	// ran again on B only if A's outcome for it was refused. A commits a
	// step's outcome at the next idle point, which is in the next step's
	// body: so at most two, the body A had in flight when it lost the lease
	// and the one before it.
	os, err := st.Outcomes(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(os) != n {
		t.Fatalf("%d outcomes; want %d", len(os), n)
	}
	for _, o := range os { // step i has key "i" and returns i
		if o.Status != store.OutcomeOK || string(o.Value) != o.Key {
			t.Errorf("outcome %s: %s %s; want ok %s", o.Key, o.Status, o.Value, o.Key)
		}
	}
	ranA, ranB := bodiesA.bodiesOf(run.ID), bodiesB.bodiesOf(run.ID)
	twice := 0
	for k := range ranB {
		if ranA[k] > 0 {
			twice++
		}
	}
	if len(ranA) == 0 || len(ranB) == 0 || len(ranA)+len(ranB)-twice != n || twice > 2 {
		t.Errorf("step bodies run by A: %d, by B: %d, by both: %d; want both, %d in all, at most 2 twice", len(ranA), len(ranB), twice, n)
	}

	// A's lease, should A come back with it: refused.
	stale := store.Lease{RunID: run.ID, Owner: "A", Token: hist[0].Token}
	bad := store.Outcome{Key: "99", Kind: "step", Function: "link", Status: store.OutcomeOK, Value: []byte("99"), Seq: 99}
	if err := st.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{{RunID: run.ID, Outcome: bad}}, Fence: &stale}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("commit with A's stale lease: %v; want ErrLeaseLost", err)
	}
	if got := outcomes(); got != n {
		t.Errorf("%d outcomes after the stale commit; want %d", got, n)
	}
}

// TestLeaseSelfReclaim: a worker whose renewals fail lets its lease
// expire and then claims the run again itself. The new lease fences its
// earlier drive off: that drive is stopped, and the run goes on under the
// new lease from its journal, again after each expiry, until it
// completes. The worker does not spin claiming and releasing the run
// while its earlier drive is still winding down.
func TestLeaseSelfReclaim(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps := &partitionStore{Store: st}
	ps.cut.Store(true) // renewals fail from the start; claims go through
	var logA syncBuffer
	a, err := newHost(ctx, Config{Store: ps, CacheDir: cacheDir, Logger: slog.New(slog.NewTextHandler(&logA, nil))}, withTestDefaults(testHooks{}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	const n, ttl = 12, 300 * time.Millisecond
	run := startChain(t, a, "self", n)
	wctx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() {
		worked <- a.Work(wctx, WorkOptions{Owner: "A", LeaseTTL: ttl, Poll: 20 * time.Millisecond, Grace: time.Second})
	}()
	began := time.Now()
	var final store.Run
	waitFor(t, func() bool {
		final, err = st.Run(ctx, run.ID)
		return err == nil && final.Status.Terminal()
	})
	took := time.Since(began)
	stop()
	if err := <-worked; err != nil {
		t.Fatal(err)
	}
	if final.Status != store.RunCompleted || string(final.Result) != fmt.Sprint(n*(n+1)/2) {
		t.Fatalf("run %s %q %s; want completed with %d\n%s", final.Status, final.Error, final.Result, n*(n+1)/2, logA.String())
	}
	hist, err := st.LeaseHistory(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	// One lease per expiry, give or take: not a claim-release spin.
	if most := int(took/ttl) + 3; len(hist) < 2 || len(hist) > most {
		t.Fatalf("%d leases in %s with a TTL of %s; want 2 to %d\n%+v", len(hist), took.Round(time.Millisecond), ttl, most, hist)
	}
	for i, r := range hist {
		if r.Owner != "A" {
			t.Errorf("lease %d held by %q; want A", r.Token, r.Owner)
		}
		if i > 0 && r.ClaimedAt < hist[i-1].End() {
			t.Errorf("lease %d claimed at %d, before lease %d ended at %d", r.Token, r.ClaimedAt, hist[i-1].Token, hist[i-1].End())
		}
	}
	if lost := a.metrics.NS("").LeasesLost.Load(); lost < 1 || int(lost) >= len(hist) {
		t.Errorf("%d drives stopped for a lost lease, with %d leases; want 1 to %d", lost, len(hist), len(hist)-1)
	}
	t.Logf("completed in %s with %d leases", took.Round(time.Millisecond), len(hist))
}

// TestLeaseRecheckInbox: a cancellation requested through another worker
// (straight into the store, so this host is not told) reaches a run that
// executes here with an activity in flight at the next lease renewal,
// not only once the run would suspend: the cancellation is recorded while
// the activity still runs, and the run ends canceled once it returns.
func TestLeaseRecheckInbox(t *testing.T) {
	h := newTestHost(t, Config{})
	m := h.deploy(t, featuresPkg)
	release := make(chan struct{})
	h.RegisterActivity("block", func(ctx context.Context, in []byte) ([]byte, error) {
		select {
		case <-release:
			return []byte(`"released"`), nil
		case <-time.After(20 * time.Second):
			return nil, errors.New("never released")
		}
	})
	ctx := context.Background()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go h.Work(wctx, WorkOptions{Owner: "A", LeaseTTL: 300 * time.Millisecond, Poll: 20 * time.Millisecond})
	r := startRun(t, h, m, "call", `{"activity":"block"}`, 0)
	hasKey := func(key string) bool {
		for _, o := range h.outcomes(t, r.ID) {
			if o.Key == key {
				return true
			}
		}
		return false
	}
	waitFor(t, func() bool { return hasKey("1") && h.isActive(r.ID) })
	if _, err := h.st.RequestCancel(ctx, r.ID, "from another worker"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return hasKey(store.CancelKey) })
	close(release)
	waitFor(t, func() bool {
		got, err := h.st.Run(ctx, r.ID)
		return err == nil && got.Status == store.RunCanceled
	})
}

// TestClaimOutageLog: while claims fail (the store is unreachable), the
// worker logs the first failure and then at most one line a minute, and
// one line when claims work again.
func TestClaimOutageLog(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var c claimOutage
	c.report(log, nil)
	for range 40 { // 10 s of polls at the default interval
		c.report(log, errPartition)
	}
	c.report(log, nil)
	c.report(log, nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "claim due runs") || !strings.Contains(lines[0], "connection refused") ||
		!strings.Contains(lines[1], "claims work again") || !strings.Contains(lines[1], "failed_claims=40") {
		t.Errorf("log during an outage of 40 claims:\n%s", buf.String())
	}
	c.report(log, errPartition)
	c.since, c.log = c.since.Add(-2*time.Minute), c.log.Add(-2*time.Minute) // a long outage
	c.report(log, errPartition)
	if n := strings.Count(buf.String(), "claims still failing"); n != 1 {
		t.Errorf("%d reminders after two minutes of failures; want 1:\n%s", n, buf.String())
	}
}

// lateRenewStore holds the commit that releases a run's lease until a
// renewal of that lease has been tried after it, so that the renewal
// finds the lease gone: the race between a run's last commit and its
// lease's renewal, made certain.
type lateRenewStore struct {
	store.Store
	released atomic.Bool
	renewed  chan error
}

func (s *lateRenewStore) Commit(ctx context.Context, b store.Batch) error {
	err := s.Store.Commit(ctx, b)
	if err == nil && b.Release {
		s.released.Store(true)
		<-s.renewed
	}
	return err
}

func (s *lateRenewStore) RenewLease(ctx context.Context, l store.Lease, expiry int64) error {
	err := s.Store.RenewLease(ctx, l, expiry)
	if s.released.Load() {
		select {
		case s.renewed <- err:
		default:
		}
	}
	return err
}

// TestLeaseRenewalAfterOwnRelease: a renewal that comes after the run's
// last commit released the lease finds no lease; that is the drive's own
// release, so the run completes, no lease is counted lost and nothing is
// logged as lost.
func TestLeaseRenewalAfterOwnRelease(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ls := &lateRenewStore{Store: st, renewed: make(chan error)}
	var logs syncBuffer
	h, err := newHost(ctx, Config{Store: ls, CacheDir: cacheDir, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, withTestDefaults(testHooks{}))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	run := startChain(t, h, "late", 1)
	wctx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() {
		// The TTL leaves room for slow renewals (the race detector on a
		// busy machine: up to 90 ms each), so the lease never expires
		// before the run releases it; with 30 ms it did, and was lost.
		worked <- h.Work(wctx, WorkOptions{Owner: "A", LeaseTTL: 600 * time.Millisecond, Poll: 10 * time.Millisecond, Grace: time.Second})
	}()
	var final store.Run
	waitFor(t, func() bool {
		final, err = st.Run(ctx, run.ID)
		return err == nil && final.Status.Terminal() && ls.released.Load()
	})
	stop()
	if err := <-worked; err != nil {
		t.Fatal(err)
	}
	if final.Status != store.RunCompleted {
		t.Fatalf("run %s %q; want completed\n%s", final.Status, final.Error, logs.String())
	}
	if lost := h.metrics.NS("").LeasesLost.Load(); lost != 0 || strings.Contains(logs.String(), "lease lost") {
		t.Errorf("%d leases counted lost after the run released its own; want 0\n%s", lost, logs.String())
	}
}
