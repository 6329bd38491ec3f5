package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// Workloads are the workload names, in the order `skein bench` runs them.
var Workloads = []string{"sequential", "concurrent", "fanout", "replay", "activation", "memory", "activities", "remote-activities", "retention"}

// Sizes are the sizes of the workloads. DefaultSizes are those of the
// performance issue; tests use smaller ones.
type Sizes struct {
	Steps     int // sequential and replay: steps in the run (10,000)
	Runs      int // concurrent: runs started together (1,000)
	RunSteps  int // concurrent: steps per run (10)
	Workers   int // concurrent: runs active at a time (0: all)
	Tasks     int // fanout: tasks spawned with skein.Go (1,000)
	Samples   int // activation: runs timed (200)
	Live      int // memory: instances held live at once (100)
	Suspended int // memory: suspended runs in the store (100,000)
	Calls     int // activities: calls in the sequential run (2,000)
	CallRuns  int // activities: runs started together (500)
	RunCalls  int // activities: calls per run (10)
	Repeat    int // sequential, concurrent, fanout, replay, activities: measurements; the median is reported (3)
	// retention: virtual days of a schedule's runs (30), days of
	// retention (7), runs per virtual day (8,640: one slot in ten of a
	// schedule firing every second; 86,400 is every slot).
	RetentionDays, RetentionKeep, RetentionPerDay int
}

// DefaultSizes returns the sizes of the performance issue.
func DefaultSizes() Sizes {
	return Sizes{Steps: 10000, Runs: 1000, RunSteps: 10, Workers: 32, Tasks: 1000,
		Samples: 200, Live: 100, Suspended: 100000, Calls: 2000, CallRuns: 500, RunCalls: 10, Repeat: 3,
		RetentionDays: 30, RetentionKeep: 7, RetentionPerDay: 8640}
}

// QuickSizes returns tiny sizes that run every workload in a few seconds.
func QuickSizes() Sizes {
	return Sizes{Steps: 200, Runs: 20, RunSteps: 10, Workers: 4, Tasks: 20,
		Samples: 5, Live: 4, Suspended: 200, Calls: 50, CallRuns: 10, RunCalls: 5, Repeat: 1,
		RetentionDays: 6, RetentionKeep: 2, RetentionPerDay: 240}
}

// Figure is one measured figure.
type Figure struct {
	Workload   string  `json:"workload"`
	Metric     string  `json:"metric"`
	Value      float64 `json:"value"`
	Durability string  `json:"durability"`
	Interrupt  string  `json:"interrupt"` // "on" or "off" (host.Config.DisableInterrupt)
	Reuse      string  `json:"reuse"`     // "on" or "off" (host.Config.DisableInstanceReuse)
	Engine     string  `json:"engine"`    // "wazero" or "wasmtime" (host.Config.Engine)
}

// Labels is a figure with only the labels of o set: durability,
// interrupt checks, instance reuse and engine, as the figures of a run
// with o carry them.
func (o Options) Labels() Figure {
	f := Figure{Durability: o.Durability, Interrupt: onOff(!o.DisableInterrupt), Reuse: onOff(!o.DisableInstanceReuse), Engine: o.Engine}
	if f.Durability == "" {
		f.Durability = "normal"
	}
	if o.Postgres != "" {
		f.Durability = "postgres"
	}
	if f.Engine == "" {
		f.Engine = "wazero"
	}
	return f
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Run runs one workload and returns its figures. progress, if not nil,
// receives a line per measurement.
func Run(ctx context.Context, workload string, o Options, s Sizes, progress io.Writer) ([]Figure, error) {
	if !slices.Contains(Workloads, workload) {
		return nil, fmt.Errorf("unknown workload %q (want one of %v)", workload, Workloads)
	}
	if s.Repeat <= 0 {
		s.Repeat = 1
	}
	if progress == nil {
		progress = io.Discard
	}
	var figs []Figure
	add := func(metric string, v float64) {
		f := o.Labels()
		f.Workload, f.Metric, f.Value = workload, metric, v
		figs = append(figs, f)
	}
	e, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	// repeat measures fn s.Repeat times after one warm-up and returns the median.
	repeat := func(what string, fn func() (time.Duration, error)) (time.Duration, error) {
		if _, err := fn(); err != nil {
			return 0, err
		}
		var ds []time.Duration
		for i := 0; i < s.Repeat; i++ {
			d, err := fn()
			if err != nil {
				return 0, err
			}
			fmt.Fprintf(progress, "%s: %s %v\n", workload, what, d.Round(time.Microsecond))
			ds = append(ds, d)
		}
		slices.Sort(ds)
		return ds[len(ds)/2], nil
	}
	switch workload {
	case "sequential":
		d, err := repeat(fmt.Sprintf("one run of %d steps", s.Steps), func() (time.Duration, error) { return e.Sequential(ctx, s.Steps) })
		if err != nil {
			return nil, err
		}
		add("steps_per_s", float64(s.Steps)/d.Seconds())
	case "concurrent":
		d, err := repeat(fmt.Sprintf("%d runs x %d steps", s.Runs, s.RunSteps), func() (time.Duration, error) {
			return e.Concurrent(ctx, s.Runs, s.RunSteps, s.Workers)
		})
		if err != nil {
			return nil, err
		}
		add("steps_per_s", float64(s.Runs*s.RunSteps)/d.Seconds())
		add("runs_per_s", float64(s.Runs)/d.Seconds())
	case "fanout":
		d, err := repeat(fmt.Sprintf("one run of %d tasks", s.Tasks), func() (time.Duration, error) { return e.FanOut(ctx, s.Tasks) })
		if err != nil {
			return nil, err
		}
		add("total_ms", ms(d))
	case "replay":
		id, err := e.StoreHistory(ctx, s.Steps)
		if err != nil {
			return nil, err
		}
		d, err := repeat(fmt.Sprintf("resume of a %d-step history", s.Steps), func() (time.Duration, error) { return e.Replay(ctx, id) })
		if err != nil {
			return nil, err
		}
		add("steps_per_s", float64(s.Steps)/d.Seconds())
		if id, err = e.CompletedHistory(ctx, s.Steps); err != nil {
			return nil, err
		}
		d, err = repeat(fmt.Sprintf("verifying replay of a %d-step history", s.Steps), func() (time.Duration, error) { return e.VerifyReplay(ctx, id) })
		if err != nil {
			return nil, err
		}
		add("verify_steps_per_s", float64(s.Steps)/d.Seconds())
	case "activation":
		for i := 0; i < 5; i++ { // warm up
			if _, err := e.Activate(ctx); err != nil {
				return nil, err
			}
		}
		var total, firstOp, hostPart []time.Duration
		for i := 0; i < s.Samples; i++ {
			a, err := e.Activate(ctx)
			if err != nil {
				return nil, err
			}
			total, firstOp, hostPart = append(total, a.Total), append(firstOp, a.FirstOp), append(hostPart, a.Host)
		}
		add("p50_ms", ms(Percentile(total, 50)))
		add("p99_ms", ms(Percentile(total, 99)))
		add("first_op_p50_ms", ms(Percentile(firstOp, 50)))
		add("first_op_p99_ms", ms(Percentile(firstOp, 99)))
		add("p50_before_instantiate_ms", ms(Percentile(hostPart, 50)))
		fmt.Fprintf(progress, "%s: %d samples, p50 %v, p99 %v\n", workload, len(total), Percentile(total, 50), Percentile(total, 99))
		co := o
		co.CacheDir = ""
		d, err := Compile(ctx, co)
		if err != nil {
			return nil, err
		}
		add("first_compile_ms", ms(d))
		if o.CacheDir != "" {
			// The env above filled the cache folder: a new host finds the module there.
			d, err := Compile(ctx, o)
			if err != nil {
				return nil, err
			}
			add("disk_cache_compile_ms", ms(d))
		}
	case "retention":
		if err := retentionFigures(ctx, e, s, progress, add); err != nil {
			return nil, err
		}
	case "activities", "remote-activities":
		if err := activityFigures(ctx, e, workload == "remote-activities", s, repeat, add); err != nil {
			return nil, err
		}
	case "memory":
		if _, err := e.LiveInstances(ctx, s.Live); err != nil { // warm up
			return nil, err
		}
		per, err := e.LiveInstances(ctx, s.Live)
		if err != nil {
			return nil, err
		}
		add("live_instance_rss_mib", mib(per))
		fmt.Fprintf(progress, "%s: %d live instances, %.2f MiB each\n", workload, s.Live, mib(per))
		counts := []int{0, s.Suspended / 10, s.Suspended}
		points, err := e.Suspended(ctx, counts)
		if err != nil {
			return nil, err
		}
		for _, p := range points {
			fmt.Fprintf(progress, "%s: %d suspended runs: host RSS %.1f MiB (%.1f MiB in the host that wrote them), database %.1f MiB\n",
				workload, p.Runs, mib(p.RSS), mib(p.WriterRSS), mib(p.DBBytes))
		}
		last := points[len(points)-1]
		add("host_rss_mib_0_suspended", mib(points[0].RSS))
		add("host_rss_mib", mib(last.RSS))
		add("writer_rss_mib", mib(last.WriterRSS))
		add("suspended_runs", float64(last.Runs))
	}
	return figs, nil
}

// Percentile returns the p-th percentile (nearest rank) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mib(b int64) float64 { return float64(b) / (1 << 20) }
