package host

// The host's metrics through the Prometheus client library: the series
// and histograms of host/internal/metrics in a registry of the host's
// own, and the store's series read at each scrape.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

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

// MetricsGatherer returns what GET /metrics of `skein serve` answers, as
// a prometheus.Gatherer: the host's registry (its own, never the
// library's global one, so hosts in one process do not collide) of the
// series read from memory and the histograms, and the series read from
// the store, which it reads under ctx at each Gather (skein_runs a page
// at a time up to 10000 per status: a store with more reports 10000,
// read it as "at least"; skein_task_queue). docs/observability.md lists
// the series; those about runs, ops, tasks and executions have a
// namespace label (NamespaceGatherer keeps one namespace's). A failed
// store read leaves its series out and is Gather's
// error, after the rest; promhttp.HandlerFor with
// promhttp.ContinueOnError serves the rest.
func (h *Host) MetricsGatherer(ctx context.Context) prometheus.Gatherer {
	counts := metrics.NewStoreCounts(h.cfg.Store, h.runsCountCap, h.runsCountPage)
	return prometheus.Gatherers{h.registry, counts.Gatherer(ctx)}
}

// WriteMetrics writes MetricsGatherer's series to w in the Prometheus
// text exposition format (version 0.0.4), through the client library's
// encoder. A store error leaves its series out and is returned after
// the rest is written.
func (h *Host) WriteMetrics(ctx context.Context, w io.Writer) error {
	return encodeMetrics(h.MetricsGatherer(ctx), w)
}

// encodeMetrics writes what g gathers in the Prometheus text format.
func encodeMetrics(g prometheus.Gatherer, w io.Writer) error {
	fams, gerr := g.Gather()
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return gerr
}

// newRegistry is the host's metrics registry: its counters, gauges and
// histograms, and its figures that live elsewhere (journal cache, active
// runs, compiled modules).
func (h *Host) newRegistry() *prometheus.Registry {
	return h.metrics.Registry(metrics.Sources{
		JournalLoads: func() (uint64, uint64) {
			if h.journals == nil {
				return 0, 0
			}
			return h.journals.Loads()
		},
		ActiveRuns: func() map[string]int {
			h.mu.Lock()
			defer h.mu.Unlock()
			n := map[string]int{}
			for id := range h.active {
				n[store.NamespaceOf(id)]++
			}
			return n
		},
		Modules:     h.modules.Stats,
		ModuleLimit: h.cfg.MaxCompiledBytes,
	})
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

// NamespaceCPU is the running time of namespace ns's executions in this
// process so far ("" is the default namespace): what MaxExecutionCPU
// measures of each execution (its wall time less its waits at idle
// points, in step-body sleeps and for the store), summed as each ends,
// over drives, verifying replays and upgrade checks. It only grows; it
// is skein_execution_cpu_seconds_total, and the base of CPU quotas.
func (h *Host) NamespaceCPU(ns string) time.Duration {
	return h.metrics.CPU(ns)
}
