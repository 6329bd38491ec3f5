package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/bench"
	"github.com/skeinrun/skein/store/sqlite"
)

// defaultBenchModule is where `make bench-wasm` puts the bench workflows.
const defaultBenchModule = "bin/bench.wasm"

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stderr)
	workload := fs.String("workload", "all", "workloads to run, comma-separated: "+strings.Join(bench.Workloads, ", ")+", or all")
	durability := fs.String("durability", "both", "store durability: normal, strict or both")
	interrupt := fs.String("interrupt", "on", "guest interrupt checks (host.Config.DisableInterrupt): on, off or both")
	reuse := fs.String("reuse", "on", "reuse of reset instances (host.Config.DisableInstanceReuse): on, off or both")
	engines := fs.String("engine", "wazero", "engines, comma-separated: wazero, wasmtime (a binary built with -tags wasmtime), or all; each workload runs on each in turn")
	asJSON := fs.Bool("json", false, "print one JSON object per figure")
	module := fs.String("module", defaultBenchModule, "the bench workflow module (build it with: make bench-wasm)")
	dir := fs.String("dir", "", "folder for the benchmark databases, created if missing (default: a temporary folder, removed)")
	quick := fs.Bool("quick", false, "tiny sizes: every workload in a few seconds (a smoke test, not a measurement)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	pgURL := fs.String("store", "", "a postgres:// URL: run the activities workloads on that PostgreSQL database instead of SQLite (--durability is then ignored)")
	s := benchSizeFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("bench takes no positional arguments")}
	}
	if *quick {
		quickSizes(fs, s)
	}
	workloads, err := pickList("--workload", *workload, bench.Workloads, "all")
	if err != nil {
		return err
	}
	variants, err := benchVariants(workloads, *durability, *interrupt, *reuse, *engines, *pgURL)
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile(*module)
	if err != nil {
		return fmt.Errorf("bench module: %w (build it with: make bench-wasm, or pass --module)", err)
	}
	if *dir != "" {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return fmt.Errorf("bench --dir: %w", err)
		}
	}
	// One compilation cache for the whole command: the first host compiles
	// the module, every later one loads it from this folder.
	cache, err := os.MkdirTemp("", "skein-bench-cache-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(cache) }() // a scratch cache under the temporary folder
	self, err := benchWorker()
	if err != nil {
		return err
	}
	progress := stderr
	if *quiet {
		progress = io.Discard
	}
	enc := json.NewEncoder(stdout)
	failed := 0
	for _, w := range workloads {
		for _, o := range variants {
			o.Module, o.Dir, o.CacheDir, o.WorkerCommand = wasm, *dir, cache, self
			figs, err := bench.Run(ctx, w, o, *s, progress)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				fmt.Fprintf(stderr, "skein bench: %s (%s): %v\n", w, variantName(o), err)
				failed++
				continue
			}
			if err := printFigures(stdout, enc, figs, *asJSON); err != nil {
				return err
			}
		}
	}
	if failed > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%d benchmark(s) failed", failed)}
	}
	return nil
}

// benchSizeFlags defines the flags of the workloads' sizes.
func benchSizeFlags(fs *flag.FlagSet) *bench.Sizes {
	s := bench.DefaultSizes()
	fs.IntVar(&s.Steps, "steps", s.Steps, "sequential, replay: steps in the run")
	fs.IntVar(&s.Runs, "runs", s.Runs, "concurrent: runs started together")
	fs.IntVar(&s.RunSteps, "run-steps", s.RunSteps, "concurrent: steps per run")
	fs.IntVar(&s.Workers, "workers", s.Workers, "concurrent: runs active at a time (0: all)")
	fs.IntVar(&s.Tasks, "tasks", s.Tasks, "fanout: tasks spawned")
	fs.IntVar(&s.Samples, "samples", s.Samples, "activation: runs timed")
	fs.IntVar(&s.Live, "live", s.Live, "memory: instances held live at once")
	fs.IntVar(&s.Suspended, "suspended", s.Suspended, "memory: suspended runs created in the store")
	fs.IntVar(&s.Calls, "calls", s.Calls, "activities, remote-activities: calls in the sequential run")
	fs.IntVar(&s.CallRuns, "call-runs", s.CallRuns, "activities, remote-activities: runs started together")
	fs.IntVar(&s.RunCalls, "run-calls", s.RunCalls, "activities, remote-activities: calls per run")
	fs.IntVar(&s.RetentionDays, "retention-days", s.RetentionDays, "retention: virtual days of a schedule's runs")
	fs.IntVar(&s.RetentionKeep, "retention-keep", s.RetentionKeep, "retention: days a run is kept after it ended")
	fs.IntVar(&s.RetentionPerDay, "retention-runs-per-day", s.RetentionPerDay, "retention: runs per virtual day, dividing 86400 (86400: a run every second)")
	fs.IntVar(&s.Repeat, "repeat", s.Repeat, "sequential, concurrent, fanout, replay: measurements (the median is reported)")
	return &s
}

// quickSizes sets the quick sizes, except where a flag was given.
func quickSizes(fs *flag.FlagSet, s *bench.Sizes) {
	q := bench.QuickSizes()
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, p := range map[string][2]*int{
		"steps": {&s.Steps, &q.Steps}, "runs": {&s.Runs, &q.Runs}, "run-steps": {&s.RunSteps, &q.RunSteps},
		"workers": {&s.Workers, &q.Workers}, "tasks": {&s.Tasks, &q.Tasks}, "samples": {&s.Samples, &q.Samples},
		"live": {&s.Live, &q.Live}, "suspended": {&s.Suspended, &q.Suspended}, "repeat": {&s.Repeat, &q.Repeat},
		"calls": {&s.Calls, &q.Calls}, "call-runs": {&s.CallRuns, &q.CallRuns}, "run-calls": {&s.RunCalls, &q.RunCalls},
		"retention-days": {&s.RetentionDays, &q.RetentionDays}, "retention-keep": {&s.RetentionKeep, &q.RetentionKeep},
		"retention-runs-per-day": {&s.RetentionPerDay, &q.RetentionPerDay},
	} {
		if !set[name] {
			*p[0] = *p[1]
		}
	}
}

// benchVariants returns the options of every combination of durability,
// interrupt checks, instance reuse and engine the flags select, in the
// order each workload runs them.
func benchVariants(workloads []string, durability, interrupt, reuse, engines, pgURL string) ([]bench.Options, error) {
	durs, err := pickList("--durability", durability, []string{sqlite.DurabilityNormal, sqlite.DurabilityStrict}, "both")
	if err != nil {
		return nil, err
	}
	if pgURL != "" {
		if !strings.HasPrefix(pgURL, "postgres://") && !strings.HasPrefix(pgURL, "postgresql://") {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("--store %q: want a postgres:// URL", pgURL)}
		}
		for _, w := range workloads {
			if w != "activities" && w != "remote-activities" {
				return nil, &exitError{code: exitUsage, err: fmt.Errorf("--store: only the activities and remote-activities workloads run on PostgreSQL (not %q)", w)}
			}
		}
		durs = durs[:1] // durability is SQLite's
	}
	intrs, err := pickList("--interrupt", interrupt, []string{"on", "off"}, "both")
	if err != nil {
		return nil, err
	}
	reuses, err := pickList("--reuse", reuse, []string{"on", "off"}, "both")
	if err != nil {
		return nil, err
	}
	engs, err := pickList("--engine", engines, []string{host.EngineWazero, host.EngineWasmtime}, "all")
	if err != nil {
		return nil, err
	}
	for _, e := range engs {
		if err := checkEngine(e); err != nil {
			return nil, err
		}
	}
	var out []bench.Options
	for _, d := range durs {
		for _, in := range intrs {
			for _, re := range reuses {
				for _, eng := range engs {
					out = append(out, bench.Options{Durability: d, DisableInterrupt: in == "off", DisableInstanceReuse: re == "off", Engine: eng, Postgres: pgURL})
				}
			}
		}
	}
	return out, nil
}

// variantName names a variant in an error line.
func variantName(o bench.Options) string {
	f := o.Labels()
	return fmt.Sprintf("durability %s, interrupt %s, reuse %s, engine %s", f.Durability, f.Interrupt, f.Reuse, f.Engine)
}

// benchWorker returns the command of the remote-activities workload's
// worker: this binary, as a process of its own (benchWorkerCommand), or
// nil in a Go test binary, which has no such command (it would run its
// tests instead), so that the worker runs in this process.
func benchWorker() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: find this program for the worker process: %w", err)
	}
	if strings.HasSuffix(exe, ".test") {
		return nil, nil
	}
	return []string{exe, benchWorkerCommand}, nil
}

// printFigures prints figures, as JSON objects or as lines.
func printFigures(stdout io.Writer, enc *json.Encoder, figs []bench.Figure, asJSON bool) error {
	for _, f := range figs {
		if asJSON {
			if err := enc.Encode(f); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(stdout, "%-11s %-26s %12s  durability=%s interrupt=%s reuse=%s engine=%s\n", f.Workload, f.Metric, formatValue(f.Value), f.Durability, f.Interrupt, f.Reuse, f.Engine)
	}
	return nil
}

// pickList parses a comma-separated choice from allowed; all selects
// every allowed value.
func pickList(flagName, v string, allowed []string, all string) ([]string, error) {
	if v == all {
		return allowed, nil
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allowed, p) {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s %q: want %s or %s", flagName, p, strings.Join(allowed, ", "), all)}
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// formatValue prints large figures as integers and small ones with two decimals.
func formatValue(v float64) string {
	if math.Abs(v) >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// benchWorkerCommand is the hidden command that runs the worker of the
// remote-activities workload: `skein bench-worker --server URL`.
const benchWorkerCommand = "bench-worker"

func cmdBenchWorker(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet(benchWorkerCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("server", "", "the bench's API server")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	return bench.RunWorker(ctx, *url)
}
