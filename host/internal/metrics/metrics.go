// Package metrics holds what a host counts in memory (counters, gauges,
// histograms) and the pieces of the Prometheus text format that
// host.WriteMetrics prints them in. It knows nothing of the host.
package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/skeinrun/skein/store"
)

// Metrics is what a host counts. Every field is safe for concurrent use.
type Metrics struct {
	Exec                        // the executions': ops recorded, reused instances, fed ops
	Executions    atomic.Uint64 // instantiations of a run
	Replays       atomic.Uint64 // executions that started with a non-empty journal
	EvictReplay   atomic.Uint64 // instances dropped to replay at once (EvictAlways)
	EvictSuspend  atomic.Uint64 // instances dropped because the run suspended
	LiveInstances atomic.Int64  // wasm instances alive now
	LeasesClaimed atomic.Uint64 // leases Work took on runs
	LeasesLost    atomic.Uint64 // leases lost while driving (another worker claimed the run)
	DriveFailures atomic.Uint64 // drives by Work that failed and back off (retry.go)
	// Remote activity tasks (taskapi.go): attempts handed to workers,
	// completed, failed by their worker, and timed out (lease expired).
	TasksClaimed, TasksCompleted, TasksFailed, TasksTimedOut atomic.Uint64
	Ended                                                    [len(Statuses)]atomic.Uint64
	Activation                                               *Histogram // drive start (or replay start) to the guest's first host call
	StoreCommit                                              *Histogram // store.Commit calls
}

// Statuses are the run statuses, in the order metrics print them.
var Statuses = [...]store.RunStatus{store.RunPending, store.RunRunning, store.RunSuspended,
	store.RunCompleted, store.RunFailed, store.RunDiverged, store.RunCanceled, store.RunContinued}

func NewMetrics() *Metrics {
	return &Metrics{
		Activation:  NewHistogram(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
		StoreCommit: NewHistogram(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1),
	}
}

// Instance counts a live instance until the returned func is called.
func (m *Metrics) Instance() func() {
	m.LiveInstances.Add(1)
	return func() { m.LiveInstances.Add(-1) }
}

// Execution counts an execution of a run that starts.
func (m *Metrics) Execution(replay bool) {
	m.Executions.Add(1)
	if replay {
		m.Replays.Add(1)
	}
}

// Activated observes the activation latency of an execution that began
// activating at start, at its first host call (the guest's hello), and
// clears start. Executions that are not a driven run's (describe,
// verifying replays) have no start and are not observed.
func (m *Metrics) Activated(start *time.Time) {
	if start.IsZero() {
		return
	}
	m.Activation.Observe(time.Since(*start).Seconds())
	*start = time.Time{}
}

// RunEnded counts a run that reached status s in this process.
func (m *Metrics) RunEnded(s store.RunStatus) {
	for i, st := range Statuses {
		if st == s {
			m.Ended[i].Add(1)
		}
	}
}

// TimedStore times the store's commits for the store write histogram.
type TimedStore struct {
	store.Store
	M *Metrics
}

func (s TimedStore) Commit(ctx context.Context, b store.Batch) error {
	t := time.Now()
	err := s.Store.Commit(ctx, b)
	s.M.StoreCommit.Observe(time.Since(t).Seconds())
	return err
}

// Exec are the counters an execution adds to (host/internal/exec).
type Exec struct {
	OpsRecorded atomic.Uint64 // journal records made (settled or pending)
	Reused      atomic.Uint64 // executions on an instance reset after an earlier one
	FedOps      atomic.Uint64 // replayed ops the guest took from a feed (feed.go)
}
