package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skeinrun/skein/host/internal/modules"
	"github.com/skeinrun/skein/store"
)

// Sources are the host's figures that live outside Metrics, read at
// each scrape.
type Sources struct {
	JournalLoads func() (memory, stored uint64) // the journal cache's loads (nil: none)
	ActiveRuns   func() map[string]int          // runs driven by this process now, by namespace
	Modules      func() modules.Stats           // the compiled-module cache
	ModuleLimit  int64                          // Config.MaxCompiledBytes (<= 0: none)
}

// series is one family the collector writes: its description and how
// its samples are read. Labels are fixed sets (statuses, sources,
// reasons, events) or namespaces, never run ids.
type series struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	// read sends the family's samples, one per label value set.
	read func(c *collector, emit func(v float64, labels ...string))
}

// nsSeries is one family of every namespace: read sends the samples of
// namespace n, whose label comes first.
type nsSeries struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	read func(c *collector, n *NS, emit func(v float64, labels ...string))
}

func nsDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"namespace"}, labels...), nil)
}

func nsCounter(name, help string, read func(n *NS) uint64) nsSeries {
	return nsSeries{desc: nsDesc(name, help), typ: prometheus.CounterValue,
		read: func(_ *collector, n *NS, emit func(float64, ...string)) { emit(float64(read(n))) }}
}

func gauge(name, help string, read func(c *collector) float64) series {
	return series{desc: prometheus.NewDesc(name, help, nil, nil), typ: prometheus.GaugeValue,
		read: func(c *collector, emit func(float64, ...string)) { emit(read(c)) }}
}

// perNamespace are the counters and gauges about runs, one series per
// namespace (docs/observability.md lists them).
var perNamespace = []nsSeries{
	{desc: nsDesc("skein_runs_ended_total", "Runs this process drove to an end (or a divergence), by final status.", "status"),
		typ: prometheus.CounterValue, read: func(_ *collector, n *NS, emit func(float64, ...string)) {
			for i, s := range Statuses {
				if s.Terminal() || s == store.RunDiverged {
					emit(float64(n.Ended[i].Load()), string(s))
				}
			}
		}},
	nsCounter("skein_ops_recorded_total", "Journal records made by executions (ops issued and settled).", func(n *NS) uint64 { return n.OpsRecorded.Load() }),
	nsCounter("skein_executions_total", "Executions (wasm instantiations) of runs.", func(n *NS) uint64 { return n.Executions.Load() }),
	{desc: nsDesc("skein_execution_cpu_seconds_total", "Running time of executions of the namespace's runs (drives, verifying replays, upgrade checks), as MaxExecutionCPU measures it: wall time less the waits at idle points, in step-body sleeps and for the store; added as each execution ends."),
		typ: prometheus.CounterValue, read: func(_ *collector, n *NS, emit func(float64, ...string)) {
			emit(time.Duration(n.CPU.Load()).Seconds())
		}},
	nsCounter("skein_replays_total", "Executions that started by replaying a recorded journal.", func(n *NS) uint64 { return n.Replays.Load() }),
	nsCounter("skein_fed_ops_total", "Replayed ops that guests took from a feed of recorded outcomes, without an op call each (abi/README.md, feed).", func(n *NS) uint64 { return n.FedOps.Load() }),
	nsCounter("skein_reused_instances_total", "Executions that ran on an instance of the module reset to its snapshot after an earlier execution, instead of a new instance.", func(n *NS) uint64 { return n.Reused.Load() }),
	{desc: nsDesc("skein_evictions_total", "Instances dropped while their run waits: to replay at once (replay) or because the run suspended (suspend).", "reason"),
		typ: prometheus.CounterValue, read: func(_ *collector, n *NS, emit func(float64, ...string)) {
			emit(float64(n.EvictReplay.Load()), "replay")
			emit(float64(n.EvictSuspend.Load()), "suspend")
		}},
	nsCounter("skein_leases_claimed_total", "Leases this process's worker took on runs to drive them.", func(n *NS) uint64 { return n.LeasesClaimed.Load() }),
	nsCounter("skein_leases_lost_total", "Leases lost while driving: another worker claimed the run after the lease expired, and this one stopped.", func(n *NS) uint64 { return n.LeasesLost.Load() }),
	nsCounter("skein_runs_pruned_total", "Ended runs this process deleted with all their records: by its retention pruner, skein runs prune and DELETE /v1/runs/{id}.", func(n *NS) uint64 { return n.RunsPruned.Load() }),
	nsCounter("skein_drive_failures_total", "Drives of runs by this process's worker that failed (a commit or a read failed, the module did not compile); each backs off before the run is driven again.", func(n *NS) uint64 { return n.DriveFailures.Load() }),
	{desc: nsDesc("skein_tasks_total", "Remote activity task attempts by what happened: claimed by a worker, completed, failed by the worker, timed out (lease expired).", "event"),
		typ: prometheus.CounterValue, read: func(_ *collector, n *NS, emit func(float64, ...string)) {
			emit(float64(n.TasksClaimed.Load()), "claimed")
			emit(float64(n.TasksCompleted.Load()), "completed")
			emit(float64(n.TasksFailed.Load()), "failed")
			emit(float64(n.TasksTimedOut.Load()), "timed_out")
		}},
	{desc: nsDesc("skein_active_runs", "Runs driven by this process now."), typ: prometheus.GaugeValue,
		read: func(c *collector, n *NS, emit func(float64, ...string)) { emit(float64(c.active[n.name])) }},
}

// hostSeries are the counters and gauges of the process as a whole.
var hostSeries = []series{
	{desc: prometheus.NewDesc("skein_journal_loads_total", "Run journals loaded: from the journals this host keeps in memory for the runs it drove (memory) or from the store (store).", []string{"source"}, nil),
		typ: prometheus.CounterValue, read: func(c *collector, emit func(float64, ...string)) {
			var memory, stored uint64
			if c.src.JournalLoads != nil {
				memory, stored = c.src.JournalLoads()
			}
			emit(float64(memory), "memory")
			emit(float64(stored), "store")
		}},
	gauge("skein_live_instances", "WebAssembly instances alive now.", func(c *collector) float64 { return float64(c.m.LiveInstances.Load()) }),
}

// moduleSeries are the compiled-module cache's (modules.Stats), read once
// per scrape.
var moduleSeries = []struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	read func(st modules.Stats, limit int64) float64
}{
	{prometheus.NewDesc("skein_compiled_modules", "Compiled modules in the host's cache.", nil, nil), prometheus.GaugeValue,
		func(st modules.Stats, _ int64) float64 { return float64(st.Entries) }},
	{prometheus.NewDesc("skein_compiled_module_bytes", "Estimated memory of the compiled modules in the cache (machine code, decoded module, memory image).", nil, nil), prometheus.GaugeValue,
		func(st modules.Stats, _ int64) float64 { return float64(st.Bytes) }},
	{prometheus.NewDesc("skein_compiled_module_bytes_limit", "The cache's bound, Config.MaxCompiledBytes (--max-compiled-bytes); -1: none.", nil, nil), prometheus.GaugeValue,
		func(_ modules.Stats, limit int64) float64 { return float64(max(limit, -1)) }},
	{prometheus.NewDesc("skein_compiled_module_evictions_total", "Compiled modules evicted from the cache to stay within its bound.", nil, nil), prometheus.CounterValue,
		func(st modules.Stats, _ int64) float64 { return float64(st.Evictions) }},
	{prometheus.NewDesc("skein_compiled_module_discards_total", "Compiled modules dropped because the module was rejected after compiling (at the describe step or when storing it).", nil, nil), prometheus.CounterValue,
		func(st modules.Stats, _ int64) float64 { return float64(st.Discarded) }},
	{prometheus.NewDesc("skein_module_compiles_running", "Compilations holding one of the --max-concurrent-compiles slots (stopped ones too, until they end).", nil, nil), prometheus.GaugeValue,
		func(st modules.Stats, _ int64) float64 { return float64(st.Running) }},
	{prometheus.NewDesc("skein_module_compiles_waiting", "Compilations waiting for a slot.", nil, nil), prometheus.GaugeValue,
		func(st modules.Stats, _ int64) float64 { return float64(st.Waiting) }},
	{prometheus.NewDesc("skein_module_compiles_total", "Compilations of modules that succeeded (a cache miss compiles, or loads from the disk cache of --cache-dir).", nil, nil), prometheus.CounterValue,
		func(st modules.Stats, _ int64) float64 { return float64(st.Compiles) }},
}

// collector is a prometheus.Collector of a host's counters and gauges:
// it reads them at each scrape, so that adding to one stays a single
// atomic add.
type collector struct {
	m   *Metrics
	src Sources
	// active is ActiveRuns, read once per scrape.
	active map[string]int
}

// Describe sends the descriptions of every series.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range perNamespace {
		ch <- s.desc
	}
	for _, s := range hostSeries {
		ch <- s.desc
	}
	for _, s := range moduleSeries {
		ch <- s.desc
	}
}

// Collect sends the series' values now.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	// A scrape's own copy, so that concurrent scrapes do not share it.
	c = &collector{m: c.m, src: c.src, active: c.src.ActiveRuns()}
	for ns := range c.active {
		c.m.NS(ns) // a namespace driven here has its series
	}
	for _, n := range c.m.namespaces() {
		for _, s := range perNamespace {
			s.read(c, n, func(v float64, labels ...string) {
				ch <- prometheus.MustNewConstMetric(s.desc, s.typ, v, append([]string{n.name}, labels...)...)
			})
		}
	}
	for _, s := range hostSeries {
		s.read(c, func(v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(s.desc, s.typ, v, labels...)
		})
	}
	st := c.src.Modules()
	for _, s := range moduleSeries {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.read(st, c.src.ModuleLimit))
	}
}

// Registry returns a new registry of m's series and histograms and those
// of src: one per host, so that hosts in one process never collide (no
// global registry is used).
func (m *Metrics) Registry(src Sources) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{m: m, src: src})
	reg.MustRegister(m.hist.collectors()...)
	return reg
}
