// Package metrics holds what a host counts in memory (counters, gauges,
// histograms) and hands it to the Prometheus client library
// (github.com/prometheus/client_golang): a Registry per host with a
// collector that reads the counters at each scrape (collect.go), the
// histograms (histogram.go), and the series read from the store at each
// scrape (storecount.go). It knows nothing of the host.
package metrics

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/skeinrun/skein/store"
)

// Metrics is what a host counts. Every field is safe for concurrent use.
// The counters are plain atomics, added to on the hot path and read by
// the collector at each scrape (RATIONALE.md, "Metrics through the
// Prometheus client library").
type Metrics struct {
	Exec                        // the executions': ops recorded, reused instances, fed ops, op latency
	Executions    atomic.Uint64 // instantiations of a run
	Replays       atomic.Uint64 // executions that started with a non-empty journal
	EvictReplay   atomic.Uint64 // instances dropped to replay at once (EvictAlways)
	EvictSuspend  atomic.Uint64 // instances dropped because the run suspended
	LiveInstances atomic.Int64  // wasm instances alive now
	LeasesClaimed atomic.Uint64 // leases Work took on runs
	LeasesLost    atomic.Uint64 // leases lost while driving (another worker claimed the run)
	DriveFailures atomic.Uint64 // drives by Work that failed and back off (retry.go)
	RunsPruned    atomic.Uint64 // ended runs this process deleted (retention.go)
	// Remote activity tasks (taskapi.go): attempts handed to workers,
	// completed, failed by their worker, and timed out (lease expired).
	TasksClaimed, TasksCompleted, TasksFailed, TasksTimedOut atomic.Uint64
	Ended                                                    [len(Statuses)]atomic.Uint64
	hist                                                     histograms // histogram.go
}

// Statuses are the run statuses, in the order metrics list them.
var Statuses = [...]store.RunStatus{store.RunPending, store.RunRunning, store.RunSuspended,
	store.RunCompleted, store.RunFailed, store.RunDiverged, store.RunCanceled, store.RunContinued, store.RunReset}

// NewMetrics returns a host's metrics, all zero.
func NewMetrics() *Metrics {
	m := &Metrics{hist: newHistograms()}
	m.Exec.ops = &m.hist.ops
	return m
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
	m.hist.activation.Observe(time.Since(*start).Seconds())
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

// RunsClaimed observes the queue wait of runs a worker claimed at now
// (unix ns) to drive them, and counts their leases: from when each became
// due to its claim. A pending run is due from its creation, a suspended
// one woken by its timer from the timer's time; a run due for another
// reason (a settlement or a cancellation arrived, a crashed worker's
// lease expired) is counted but not observed, as the store does not keep
// when that happened.
func (m *Metrics) RunsClaimed(claimed []store.ClaimedRun, now int64) {
	m.LeasesClaimed.Add(uint64(len(claimed)))
	for i := range claimed {
		r := &claimed[i].Run
		var due int64
		switch {
		case r.Status == store.RunPending:
			due = r.CreatedAt.UnixNano()
		case r.Status == store.RunSuspended && r.WakeAt > 0 && r.WakeAt <= now:
			due = r.WakeAt
		default:
			continue
		}
		m.hist.runWait.Observe(waited(due, now))
	}
}

// TasksClaimedNow counts remote activity task attempts handed to workers
// and observes how long each waited to be claimed: from when it became
// claimable (VisibleAt: its queueing, or the end of a retry's backoff) to
// its claim. A task handed over as it was queued (taskboard) waited 0.
func (m *Metrics) TasksClaimedNow(ts []store.Task) {
	m.TasksClaimed.Add(uint64(len(ts)))
	for i := range ts {
		t := &ts[i]
		m.hist.taskWait.Observe(waited(cmp.Or(t.VisibleAt, t.ClaimedAt), t.ClaimedAt))
	}
}

// waited is the seconds from since to now (unix ns), 0 when the clocks
// that gave them disagree (another process's).
func waited(since, now int64) float64 {
	return max(time.Duration(now-since), 0).Seconds()
}

// TimedStore times the store's commits for the store commit histogram.
type TimedStore struct {
	store.Store
	M *Metrics
}

// Commit commits b and observes how long it took, failed or not.
func (s TimedStore) Commit(ctx context.Context, b store.Batch) error {
	t := time.Now()
	err := s.Store.Commit(ctx, b)
	s.M.hist.commit.Observe(time.Since(t).Seconds())
	return err
}

// Exec are the counters an execution adds to (host/internal/exec).
type Exec struct {
	OpsRecorded atomic.Uint64 // journal records made (settled or pending)
	Reused      atomic.Uint64 // executions on an instance reset after an earlier one
	FedOps      atomic.Uint64 // replayed ops the guest took from a feed (feed.go)
	ops         *opLatency    // the op latency histogram's series (histogram.go)
}
