// Package metrics holds what a host counts in memory (counters, gauges,
// histograms) and hands it to the Prometheus client library
// (github.com/prometheus/client_golang): a Registry per host with a
// collector that reads the counters at each scrape (collect.go), the
// histograms (histogram.go), and the series read from the store at each
// scrape (storecount.go). What is about runs is counted per namespace
// (ns.go) and carries a namespace label; what is about the process (its
// instances, its caches, its store's latency) does not. It knows nothing
// of the host.
package metrics

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinrun/skein/store"
)

// Metrics is what a host counts. Every field is safe for concurrent use.
// The counters are plain atomics, added to on the hot path and read by
// the collector at each scrape (RATIONALE.md, "Metrics through the
// Prometheus client library").
type Metrics struct {
	LiveInstances atomic.Int64 // wasm instances alive now
	hist          histograms   // histogram.go

	mu  sync.RWMutex
	nss map[string]*NS // by namespace name, created at first use (ns.go)
}

// Statuses are the run statuses, in the order metrics list them.
var Statuses = [...]store.RunStatus{store.RunPending, store.RunRunning, store.RunSuspended,
	store.RunCompleted, store.RunFailed, store.RunDiverged, store.RunCanceled, store.RunContinued, store.RunReset}

// NewMetrics returns a host's metrics, all zero, with the default
// namespace's series present from the start.
func NewMetrics() *Metrics {
	m := &Metrics{hist: newHistograms(), nss: map[string]*NS{}}
	m.NS(store.DefaultNamespace)
	return m
}

// NS returns the counters of namespace ns ("" is the default
// namespace), made at its first use. Namespaces are few and named by an
// operator, so the set stays small.
func (m *Metrics) NS(ns string) *NS {
	if ns == "" {
		ns = store.DefaultNamespace
	}
	m.mu.RLock()
	n := m.nss[ns]
	m.mu.RUnlock()
	if n != nil {
		return n
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n = m.nss[ns]; n == nil {
		n = newNS(ns, &m.hist)
		m.nss[ns] = n
	}
	return n
}

// Of returns the counters of the namespace of the qualified id or name
// q (a run id, an activity name: store.NamespaceOf).
func (m *Metrics) Of(q string) *NS { return m.NS(store.NamespaceOf(q)) }

// CPU is the running time of namespace ns's executions so far (NS.CPU),
// 0 for a namespace that has run nothing here. It makes no counters.
func (m *Metrics) CPU(ns string) time.Duration {
	if ns == "" {
		ns = store.DefaultNamespace
	}
	m.mu.RLock()
	n := m.nss[ns]
	m.mu.RUnlock()
	if n == nil {
		return 0
	}
	return time.Duration(n.CPU.Load())
}

// namespaces are the namespaces counted so far, by name.
func (m *Metrics) namespaces() []*NS {
	m.mu.RLock()
	out := make([]*NS, 0, len(m.nss))
	for _, n := range m.nss {
		out = append(out, n)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Instance counts a live instance until the returned func is called.
func (m *Metrics) Instance() func() {
	m.LiveInstances.Add(1)
	return func() { m.LiveInstances.Add(-1) }
}

// RunsClaimed observes the queue wait of runs a worker claimed at now
// (unix ns) to drive them, and counts their leases, each in its run's
// namespace: from when each became due to its claim. A pending run is
// due from its creation, a suspended one woken by its timer from the
// timer's time; a run due for another reason (a settlement or a
// cancellation arrived, a crashed worker's lease expired) is counted but
// not observed, as the store does not keep when that happened.
func (m *Metrics) RunsClaimed(claimed []store.ClaimedRun, now int64) {
	for i := range claimed {
		r := &claimed[i].Run
		n := m.Of(r.ID)
		n.LeasesClaimed.Add(1)
		var due int64
		switch {
		case r.Status == store.RunPending:
			due = r.CreatedAt.UnixNano()
		case r.Status == store.RunSuspended && r.WakeAt > 0 && r.WakeAt <= now:
			due = r.WakeAt
		default:
			continue
		}
		n.runWait.Observe(waited(due, now))
	}
}

// TasksClaimedNow counts remote activity task attempts handed to workers
// and observes how long each waited to be claimed, each in its run's
// namespace: from when it became claimable (VisibleAt: its queueing, or
// the end of a retry's backoff) to its claim. A task handed over as it
// was queued (taskboard) waited 0.
func (m *Metrics) TasksClaimedNow(ts []store.Task) {
	for i := range ts {
		t := &ts[i]
		n := m.Of(t.RunID)
		n.TasksClaimed.Add(1)
		since := t.VisibleAt
		if since == 0 {
			since = t.ClaimedAt
		}
		n.taskWait.Observe(waited(since, t.ClaimedAt))
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

// Exec are the counters an execution adds to (host/internal/exec), of
// its run's namespace.
type Exec struct {
	OpsRecorded atomic.Uint64 // journal records made (settled or pending)
	Reused      atomic.Uint64 // executions on an instance reset after an earlier one
	FedOps      atomic.Uint64 // replayed ops the guest took from a feed (feed.go)
	ops         *opLatency    // the op latency histogram's series (histogram.go)
}
