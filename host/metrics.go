package host

// WriteMetrics prints the host's counters, gauges and histograms
// (host/internal/metrics) and what it reads from the store and the
// module cache in the Prometheus text format (what `skein serve`
// answers at /metrics). No client library: the format is a few lines of
// text.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/skeinrun/skein/host/internal/metrics"
	"github.com/skeinrun/skein/store"
)

// Counting runs by status (skein_runs): the store is read
// defaultRunsCountPage at a time, up to defaultRunsCountCap of a status; a
// store with more reports the cap (see RATIONALE.md). A test host may set
// its own (testHooks).
const (
	defaultRunsCountCap  = 10000
	defaultRunsCountPage = 1000
)

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
		head("skein_runs", "gauge", fmt.Sprintf("Runs in the store by status (counted up to %d per status).", h.runsCountCap))
		for i, s := range metrics.Statuses {
			fmt.Fprintf(bw, "skein_runs{status=%q} %d\n", s, counts[i])
		}
		head("skein_runs_count_capped", "gauge", fmt.Sprintf("1 where skein_runs stopped counting at %d.", h.runsCountCap))
		for i, s := range metrics.Statuses {
			fmt.Fprintf(bw, "skein_runs_count_capped{status=%q} %d\n", s, metrics.Flag(capped[i]))
		}
	}
	head("skein_runs_ended_total", "counter", "Runs this process drove to an end (or a divergence), by final status.")
	for i, s := range metrics.Statuses {
		if s.Terminal() || s == store.RunDiverged {
			fmt.Fprintf(bw, "skein_runs_ended_total{status=%q} %d\n", s, m.Ended[i].Load())
		}
	}
	head("skein_ops_recorded_total", "counter", "Journal records made by executions (ops issued and settled).")
	fmt.Fprintf(bw, "skein_ops_recorded_total %d\n", m.OpsRecorded.Load())
	head("skein_executions_total", "counter", "Executions (wasm instantiations) of runs.")
	fmt.Fprintf(bw, "skein_executions_total %d\n", m.Executions.Load())
	head("skein_replays_total", "counter", "Executions that started by replaying a recorded journal.")
	fmt.Fprintf(bw, "skein_replays_total %d\n", m.Replays.Load())
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
	fmt.Fprintf(bw, "skein_evictions_total{reason=\"replay\"} %d\n", m.EvictReplay.Load())
	fmt.Fprintf(bw, "skein_evictions_total{reason=\"suspend\"} %d\n", m.EvictSuspend.Load())
	head("skein_leases_claimed_total", "counter", "Leases this process's worker took on runs to drive them.")
	fmt.Fprintf(bw, "skein_leases_claimed_total %d\n", m.LeasesClaimed.Load())
	head("skein_leases_lost_total", "counter", "Leases lost while driving: another worker claimed the run after the lease expired, and this one stopped.")
	fmt.Fprintf(bw, "skein_leases_lost_total %d\n", m.LeasesLost.Load())
	head("skein_drive_failures_total", "counter", "Drives of runs by this process's worker that failed (a commit or a read failed, the module did not compile); each backs off before the run is driven again.")
	fmt.Fprintf(bw, "skein_drive_failures_total %d\n", m.DriveFailures.Load())
	head("skein_live_instances", "gauge", "WebAssembly instances alive now.")
	fmt.Fprintf(bw, "skein_live_instances %d\n", m.LiveInstances.Load())
	h.mu.Lock()
	active := len(h.active)
	h.mu.Unlock()
	head("skein_active_runs", "gauge", "Runs driven by this process now.")
	fmt.Fprintf(bw, "skein_active_runs %d\n", active)
	metrics.WriteModules(bw, head, h.modules.Stats(), h.cfg.MaxCompiledBytes)
	if qerr := h.writeTaskMetrics(ctx, bw, head); serr == nil {
		serr = qerr
	}
	head("skein_activation_seconds", "histogram", "From the start of a run's execution to the guest's first host call.")
	m.Activation.Write(bw, "skein_activation_seconds")
	head("skein_store_commit_seconds", "histogram", "Store commits (batches of records and run updates).")
	m.StoreCommit.Write(bw, "skein_store_commit_seconds")
	if err := bw.Flush(); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("metrics: count runs: %w", serr)
	}
	return nil
}

// countRuns counts the stored runs of each status, up to runsCountCap.
func (h *Host) countRuns(ctx context.Context) (counts [len(metrics.Statuses)]int, capped [len(metrics.Statuses)]bool, err error) {
	page := h.runsCountPage
	for i, s := range metrics.Statuses {
		after := ""
		for counts[i] < h.runsCountCap {
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
		if counts[i] >= h.runsCountCap {
			counts[i], capped[i] = h.runsCountCap, true
		}
	}
	return counts, capped, nil
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
