package host

// Metrics: counters, gauges and histograms the host keeps in memory, and
// WriteMetrics, which prints them in the Prometheus text format (what
// `skein serve` answers at /metrics). No client library: the format is a
// few lines of text.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/modules"

	"github.com/skeinrun/skein/store"
)

// metrics is what a Host counts. Every field is safe for concurrent use.
type metrics struct {
	exec.Counters               // the execution's: ops recorded, reused instances, fed ops
	executions    atomic.Uint64 // instantiations of a run
	replays       atomic.Uint64 // executions that started with a non-empty journal
	evictReplay   atomic.Uint64 // instances dropped to replay at once (EvictAlways)
	evictSuspend  atomic.Uint64 // instances dropped because the run suspended
	liveInstances atomic.Int64  // wasm instances alive now
	leasesClaimed atomic.Uint64 // leases Work took on runs
	leasesLost    atomic.Uint64 // leases lost while driving (another worker claimed the run)
	driveFailures atomic.Uint64 // drives by Work that failed and back off (retry.go)
	// Remote activity tasks (taskapi.go): attempts handed to workers,
	// completed, failed by their worker, and timed out (lease expired).
	tasksClaimed, tasksCompleted, tasksFailed, tasksTimedOut atomic.Uint64
	ended                                                    [len(metricStatuses)]atomic.Uint64
	activation                                               *histogram // drive start (or replay start) to the guest's first host call
	storeCommit                                              *histogram // store.Commit calls
}

// metricStatuses are the run statuses, in the order metrics print them.
var metricStatuses = [...]store.RunStatus{store.RunPending, store.RunRunning, store.RunSuspended,
	store.RunCompleted, store.RunFailed, store.RunDiverged, store.RunCanceled, store.RunContinued}

// runsCountCap bounds how many runs of one status a scrape counts: the
// store is read runsCountPage at a time, and a store with more runs than
// this of a status reports the cap (see RATIONALE.md). Variables for tests.
var (
	runsCountCap  = 10000
	runsCountPage = 1000
)

func newMetrics() *metrics {
	return &metrics{
		activation:  newHistogram(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
		storeCommit: newHistogram(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1),
	}
}

// instance counts a live instance until the returned func is called.
func (m *metrics) instance() func() {
	m.liveInstances.Add(1)
	return func() { m.liveInstances.Add(-1) }
}

// execution counts an execution of a run that starts.
func (m *metrics) execution(replay bool) {
	m.executions.Add(1)
	if replay {
		m.replays.Add(1)
	}
}

// activated observes the activation latency of the execution of rs at
// its first host call (the guest's hello). Executions that are not a
// driven run's (describe, verifying replays) have no start and are not
// observed.
func (m *metrics) activated(rs *exec.RunState) {
	if rs == nil || rs.Activating.IsZero() {
		return
	}
	m.activation.observe(time.Since(rs.Activating).Seconds())
	rs.Activating = time.Time{}
}

// runEnded counts a run that reached status s in this process.
func (m *metrics) runEnded(s store.RunStatus) {
	for i, st := range metricStatuses {
		if st == s {
			m.ended[i].Add(1)
		}
	}
}

// timedStore times the store's commits for the store write histogram.
type timedStore struct {
	store.Store
	m *metrics
}

func (s timedStore) Commit(ctx context.Context, b store.Batch) error {
	t := time.Now()
	err := s.Store.Commit(ctx, b)
	s.m.storeCommit.observe(time.Since(t).Seconds())
	return err
}

// histogram is a Prometheus histogram with fixed upper bounds.
type histogram struct {
	bounds []float64
	counts []atomic.Uint64 // per bucket (not cumulative); the last is +Inf
	sum    atomic.Uint64   // float64 bits
	count  atomic.Uint64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	h.count.Add(1)
}

// WriteMetrics writes the host's metrics in the Prometheus text
// exposition format (version 0.0.4):
//
//   - skein_runs{status}: runs in the store by status, counted at each
//     call a page at a time up to 10000 per status (a store with more
//     reports 10000: read it as "at least");
//   - skein_runs_ended_total{status}: runs this host drove to an end;
//   - skein_ops_recorded_total, skein_executions_total,
//     skein_replays_total (executions that started by replaying a
//     journal), skein_reused_instances_total (executions on an instance
//     reset after an earlier one), skein_journal_loads_total{source}
//     (journals read from memory or from the store),
//     skein_evictions_total{reason};
//   - skein_live_instances, skein_active_runs (runs driven now);
//   - skein_compiled_modules, skein_compiled_module_bytes (and _limit),
//     skein_compiled_module_evictions_total and _discards_total,
//     skein_module_compiles_total, _running and _waiting: the
//     compiled-module cache and compilations (modcache.go);
//   - skein_activation_seconds: from the start of a run's execution
//     (loading the run, the module and the journal) to the guest's first
//     call to the host;
//   - skein_store_commit_seconds: each store commit.
//
// It costs the run count queries; everything else is read from memory.
// A store error leaves skein_runs out and is returned after the rest is
// written.
func (h *Host) WriteMetrics(ctx context.Context, w io.Writer) error {
	m := h.metrics
	bw := bufio.NewWriter(w)
	head := func(name, typ, help string) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	counts, capped, serr := h.countRuns(ctx)
	if serr == nil {
		head("skein_runs", "gauge", fmt.Sprintf("Runs in the store by status (counted up to %d per status).", runsCountCap))
		for i, s := range metricStatuses {
			fmt.Fprintf(bw, "skein_runs{status=%q} %d\n", s, counts[i])
		}
		head("skein_runs_count_capped", "gauge", fmt.Sprintf("1 where skein_runs stopped counting at %d.", runsCountCap))
		for i, s := range metricStatuses {
			fmt.Fprintf(bw, "skein_runs_count_capped{status=%q} %d\n", s, b2i(capped[i]))
		}
	}
	head("skein_runs_ended_total", "counter", "Runs this process drove to an end (or a divergence), by final status.")
	for i, s := range metricStatuses {
		if s.Terminal() || s == store.RunDiverged {
			fmt.Fprintf(bw, "skein_runs_ended_total{status=%q} %d\n", s, m.ended[i].Load())
		}
	}
	head("skein_ops_recorded_total", "counter", "Journal records made by executions (ops issued and settled).")
	fmt.Fprintf(bw, "skein_ops_recorded_total %d\n", m.OpsRecorded.Load())
	head("skein_executions_total", "counter", "Executions (wasm instantiations) of runs.")
	fmt.Fprintf(bw, "skein_executions_total %d\n", m.executions.Load())
	head("skein_replays_total", "counter", "Executions that started by replaying a recorded journal.")
	fmt.Fprintf(bw, "skein_replays_total %d\n", m.replays.Load())
	head("skein_fed_ops_total", "counter", "Replayed ops that guests took from a feed of recorded outcomes, without an op call each (abi/README.md, feed).")
	fmt.Fprintf(bw, "skein_fed_ops_total %d\n", m.FedOps.Load())
	head("skein_reused_instances_total", "counter", "Executions that ran on an instance of the module reset to its snapshot after an earlier execution, instead of a new instance.")
	fmt.Fprintf(bw, "skein_reused_instances_total %d\n", m.Reused.Load())
	head("skein_journal_loads_total", "counter", "Run journals loaded: from the journals this host keeps in memory for the runs it drove (memory) or from the store (store).")
	var fromMemory, fromStore uint64
	if h.journals != nil {
		fromMemory, fromStore = h.journals.Loads()
	}
	fmt.Fprintf(bw, "skein_journal_loads_total{source=\"memory\"} %d\n", fromMemory)
	fmt.Fprintf(bw, "skein_journal_loads_total{source=\"store\"} %d\n", fromStore)
	head("skein_evictions_total", "counter", "Instances dropped while their run waits: to replay at once (replay) or because the run suspended (suspend).")
	fmt.Fprintf(bw, "skein_evictions_total{reason=\"replay\"} %d\n", m.evictReplay.Load())
	fmt.Fprintf(bw, "skein_evictions_total{reason=\"suspend\"} %d\n", m.evictSuspend.Load())
	head("skein_leases_claimed_total", "counter", "Leases this process's worker took on runs to drive them.")
	fmt.Fprintf(bw, "skein_leases_claimed_total %d\n", m.leasesClaimed.Load())
	head("skein_leases_lost_total", "counter", "Leases lost while driving: another worker claimed the run after the lease expired, and this one stopped.")
	fmt.Fprintf(bw, "skein_leases_lost_total %d\n", m.leasesLost.Load())
	head("skein_drive_failures_total", "counter", "Drives of runs by this process's worker that failed (a commit or a read failed, the module did not compile); each backs off before the run is driven again.")
	fmt.Fprintf(bw, "skein_drive_failures_total %d\n", m.driveFailures.Load())
	head("skein_live_instances", "gauge", "WebAssembly instances alive now.")
	fmt.Fprintf(bw, "skein_live_instances %d\n", m.liveInstances.Load())
	h.mu.Lock()
	active := len(h.active)
	h.mu.Unlock()
	head("skein_active_runs", "gauge", "Runs driven by this process now.")
	fmt.Fprintf(bw, "skein_active_runs %d\n", active)
	writeModuleMetrics(bw, head, h.modules.Stats(), h.cfg.MaxCompiledBytes)
	if qerr := h.writeTaskMetrics(ctx, bw, head); serr == nil {
		serr = qerr
	}
	head("skein_activation_seconds", "histogram", "From the start of a run's execution to the guest's first host call.")
	m.activation.write(bw, "skein_activation_seconds")
	head("skein_store_commit_seconds", "histogram", "Store commits (batches of records and run updates).")
	m.storeCommit.write(bw, "skein_store_commit_seconds")
	if err := bw.Flush(); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("metrics: count runs: %w", serr)
	}
	return nil
}

func (h *histogram) write(w io.Writer, name string) {
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
	fmt.Fprintf(w, "%s_sum %s\n", name, strconv.FormatFloat(math.Float64frombits(h.sum.Load()), 'g', -1, 64))
	// The count is the +Inf bucket, so the two always agree in one scrape.
	fmt.Fprintf(w, "%s_count %d\n", name, cum)
}

// countRuns counts the stored runs of each status, up to runsCountCap.
func (h *Host) countRuns(ctx context.Context) (counts [len(metricStatuses)]int, capped [len(metricStatuses)]bool, err error) {
	page := runsCountPage
	for i, s := range metricStatuses {
		after := ""
		for counts[i] < runsCountCap {
			rs, err := h.cfg.Store.Runs(ctx, store.RunFilter{Status: s, Limit: page, After: after})
			if err != nil {
				return counts, capped, err
			}
			counts[i] += len(rs)
			if len(rs) < page {
				break
			}
			after = rs[len(rs)-1].ID
		}
		if counts[i] >= runsCountCap {
			counts[i], capped[i] = runsCountCap, true
		}
	}
	return counts, capped, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// logEnded logs a run that reached its end (or diverged), with its id:
// at Info, or Debug for a completed run.
func (h *Host) logEnded(r store.Run) {
	attrs := []any{"run", r.ID, "workflow", r.Workflow, "status", string(r.Status)}
	if r.Parent != "" {
		attrs = append(attrs, "parent", r.Parent)
	}
	if r.Error != "" {
		attrs = append(attrs, "err", r.Error)
	}
	lv := slog.LevelInfo
	if r.Status == store.RunCompleted {
		lv = slog.LevelDebug
	}
	h.log.Log(context.Background(), lv, "run ended", attrs...)
}

// writeModuleMetrics writes the compiled-module cache's metrics.
func writeModuleMetrics(bw *bufio.Writer, head func(name, typ, help string), st modules.Stats, limit int64) {
	head("skein_compiled_modules", "gauge", "Compiled modules in the host's cache.")
	fmt.Fprintf(bw, "skein_compiled_modules %d\n", st.Entries)
	head("skein_compiled_module_bytes", "gauge", "Estimated memory of the compiled modules in the cache (machine code, decoded module, memory image).")
	fmt.Fprintf(bw, "skein_compiled_module_bytes %d\n", st.Bytes)
	head("skein_compiled_module_bytes_limit", "gauge", "The cache's bound, Config.MaxCompiledBytes (--max-compiled-bytes); -1: none.")
	fmt.Fprintf(bw, "skein_compiled_module_bytes_limit %d\n", max(limit, -1))
	head("skein_compiled_module_evictions_total", "counter", "Compiled modules evicted from the cache to stay within its bound.")
	fmt.Fprintf(bw, "skein_compiled_module_evictions_total %d\n", st.Evictions)
	head("skein_compiled_module_discards_total", "counter", "Compiled modules dropped because the module was rejected after compiling (at the describe step or when storing it).")
	fmt.Fprintf(bw, "skein_compiled_module_discards_total %d\n", st.Discarded)
	head("skein_module_compiles_running", "gauge", "Compilations holding one of the --max-concurrent-compiles slots (stopped ones too, until they end).")
	fmt.Fprintf(bw, "skein_module_compiles_running %d\n", st.Running)
	head("skein_module_compiles_waiting", "gauge", "Compilations waiting for a slot.")
	fmt.Fprintf(bw, "skein_module_compiles_waiting %d\n", st.Waiting)
	head("skein_module_compiles_total", "counter", "Compilations of modules that succeeded (a cache miss compiles, or loads from the disk cache of --cache-dir).")
	fmt.Fprintf(bw, "skein_module_compiles_total %d\n", st.Compiles)
}
