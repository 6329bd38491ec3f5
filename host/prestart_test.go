package host

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// createGate holds CreateClaimedRun until release is closed (or its ctx
// ends), then fails it with fail if set; it notes any commit that writes
// outcomes of a run before that run's creation returned.
type createGate struct {
	store.Store
	fail     error
	entered  chan struct{}
	release  chan struct{}
	once     sync.Once
	created  sync.Map // run id -> true once CreateClaimedRun returned
	creating sync.Map // run id -> true while it is held
	early    atomic.Int64
}

func (s *createGate) CreateClaimedRun(ctx context.Context, r store.Run, owner string, now int64, ttl time.Duration) (store.ClaimedRun, bool, error) {
	s.creating.Store(r.ID, true)
	s.once.Do(func() { close(s.entered) })
	select {
	case <-s.release:
	case <-ctx.Done():
		return store.ClaimedRun{}, false, ctx.Err()
	}
	if s.fail != nil {
		return store.ClaimedRun{}, false, s.fail
	}
	c, created, err := s.Store.CreateClaimedRun(ctx, r, owner, now, ttl)
	s.created.Store(r.ID, true)
	return c, created, err
}

func (s *createGate) Commit(ctx context.Context, b store.Batch) error {
	for _, o := range b.Outcomes {
		if _, held := s.creating.Load(o.RunID); held {
			if _, ok := s.created.Load(o.RunID); !ok {
				s.early.Add(1)
			}
		}
	}
	return s.Store.Commit(ctx, b)
}

// prestartHost is a test host with the server module deployed and one run
// driven (the module cached, an instance to reuse), its store behind g.
func prestartHost(t *testing.T, g *createGate) (*testHost, store.Module) {
	t.Helper()
	ctx := context.Background()
	h := newTestHost(t, Config{})
	m := h.deploy(t, "./testdata/workflows/server")
	in := json.RawMessage(`{"ms":1}`)
	if _, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "sleeper", Input: in, ID: "warm", ClaimForDrive: true}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.Drive(ctx, "warm", DriveOptions{WaitTimers: true}); err != nil || r.Status != store.RunCompleted {
		t.Fatalf("drive warm: %s, %v", r.Status, err)
	}
	g.Store, g.entered = h.cfg.Store, make(chan struct{})
	if g.release == nil {
		g.release = make(chan struct{})
	}
	h.cfg.Store = g
	return h, m
}

// assertNoPrestart fails unless run id does not exist, no lease of it is
// kept, no instance is alive and no op was recorded since ops.
func assertNoPrestart(t *testing.T, h *testHost, g *createGate, id string, ops uint64) {
	t.Helper()
	if _, err := g.Store.Run(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("run %s after a failed start: %v; want not found", id, err)
	}
	h.mu.Lock()
	_, kept := h.preclaimed[id]
	h.mu.Unlock()
	if kept {
		t.Errorf("a lease of %s is kept after a failed start", id)
	}
	if n := h.metrics.LiveInstances.Load(); n != 0 {
		t.Errorf("%d instances alive after a failed start; want the prestarted one closed", n)
	}
	if n := h.metrics.Exec.OpsRecorded.Load(); n != ops {
		t.Errorf("%d ops recorded by a failed start; want none", n-ops)
	}
}

// TestPrestartFailedCreate: a start whose creation commit fails returns
// that error, and its prestarted execution leaves no run, no lease, no
// live instance and no op.
func TestPrestartFailedCreate(t *testing.T) {
	g := &createGate{fail: errors.New("simulated: disk full"), release: make(chan struct{})}
	close(g.release)
	h, m := prestartHost(t, g)
	ops, reused := h.metrics.Exec.OpsRecorded.Load(), h.metrics.Exec.Reused.Load()
	_, err := h.Start(context.Background(), StartOptions{Module: m.Hash, Workflow: "sleeper", Input: json.RawMessage(`{"ms":1}`), ID: "doomed", ClaimForDrive: true})
	if err == nil || !errors.Is(err, g.fail) {
		t.Fatalf("start with a failing creation: %v; want the store's error", err)
	}
	if h.metrics.Exec.Reused.Load() == reused {
		t.Error("no instance was started while the creation committed")
	}
	assertNoPrestart(t, h, g, "doomed", ops)
}

// TestPrestartCanceledCreate: a start whose ctx ends while its creation
// commits returns ctx's error and leaves nothing of its execution.
func TestPrestartCanceledCreate(t *testing.T) {
	g := &createGate{}
	h, m := prestartHost(t, g)
	ops := h.metrics.Exec.OpsRecorded.Load()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-g.entered
		cancel()
	}()
	_, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "sleeper", Input: json.RawMessage(`{"ms":1}`), ID: "canceled", ClaimForDrive: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("start canceled during its creation: %v; want context.Canceled", err)
	}
	assertNoPrestart(t, h, g, "canceled", ops)
}

// TestPrestartSlowCreate: while the creation commit is held, the
// prestarted execution records and commits nothing of the run; once it
// ends, the run's Drive completes it.
func TestPrestartSlowCreate(t *testing.T) {
	g := &createGate{}
	h, m := prestartHost(t, g)
	ctx := context.Background()
	ops := h.metrics.Exec.OpsRecorded.Load()
	errc := make(chan error, 1)
	go func() {
		_, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "sleeper", Input: json.RawMessage(`{"ms":1}`), ID: "slow", ClaimForDrive: true})
		errc <- err
	}()
	<-g.entered
	for h.metrics.LiveInstances.Load() == 0 { // the prestarted instance runs
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for the guest to reach its first op
	if n := h.metrics.Exec.OpsRecorded.Load(); n != ops {
		t.Errorf("%d ops recorded before the run's creation committed; want none", n-ops)
	}
	close(g.release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	r, err := h.Drive(ctx, "slow", DriveOptions{WaitTimers: true})
	if err != nil || r.Status != store.RunCompleted {
		t.Fatalf("drive slow: %s, %v", r.Status, err)
	}
	if n := g.early.Load(); n != 0 {
		t.Errorf("%d commits wrote the run's outcomes before its creation returned", n)
	}
	if n := h.metrics.LiveInstances.Load(); n != 0 {
		t.Errorf("%d instances alive after the drive", n)
	}
}

// TestPrestartExistingRun: starting an id that exists returns the stored
// run as without prestarting (a conflict for another input), drops the
// second start's execution, and the run's drive still completes it.
func TestPrestartExistingRun(t *testing.T) {
	g := &createGate{release: make(chan struct{})}
	close(g.release)
	h, m := prestartHost(t, g)
	ctx := context.Background()
	o := StartOptions{Module: m.Hash, Workflow: "sleeper", Input: json.RawMessage(`{"ms":1}`), ID: "twice", ClaimForDrive: true}
	first, err := h.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.Start(ctx, o)
	if err != nil || again.ID != first.ID || again.StartTime != first.StartTime {
		t.Fatalf("second start: %+v, %v; want the stored run", again, err)
	}
	if n := h.metrics.LiveInstances.Load(); n != 1 {
		t.Errorf("%d instances alive after the second start; want the first start's only", n)
	}
	o.Input = json.RawMessage(`{"ms":2}`)
	var ce *ConflictError
	if _, err := h.Start(ctx, o); !errors.As(err, &ce) || ce.Field != "input" {
		t.Errorf("start with another input: %v; want a conflict on the input", err)
	}
	r, err := h.Drive(ctx, "twice", DriveOptions{WaitTimers: true})
	if err != nil || r.Status != store.RunCompleted {
		t.Fatalf("drive twice: %s, %v", r.Status, err)
	}
	if n := h.metrics.LiveInstances.Load(); n != 0 {
		t.Errorf("%d instances alive after the drive", n)
	}
}
