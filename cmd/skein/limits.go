package main

import (
	"flag"
	"time"

	"github.com/skeinrun/skein/host"
)

// limitFlags are the resource limits of `skein run` and `skein serve`
// (host.Config; docs/limits.md). Zero keeps the host's default.
type limitFlags struct {
	memoryMiB    *int
	withoutYield *time.Duration
	execTime     *time.Duration
	execCPU      *time.Duration
	payload      *int
	ops          *int
	journalOps   *int
	tasks        *int
	childDepth   *int
	children     *int
	module       *int64 // nil when the command has its own module flag
	modules      *moduleFlags
	http         *httpFlags
}

func addLimitFlags(fs *flag.FlagSet, withModule bool) *limitFlags {
	l := &limitFlags{
		memoryMiB:    fs.Int("max-memory-mib", host.DefaultMemoryLimitPages/16, "linear memory per workflow instance, in MiB"),
		withoutYield: fs.Duration("max-run-without-yield", host.DefaultMaxRunWithoutYield, "longest workflow code may run without calling into the host (an infinite loop fails the run); negative: no limit"),
		execTime:     fs.Duration("max-execution-time", host.DefaultMaxExecutionTime, "longest one execution of a run may last, waits included; negative: no limit"),
		execCPU:      fs.Duration("max-execution-cpu", host.DefaultMaxExecutionCPU, "longest one execution of a run may spend running (not waiting); negative: no limit"),
		payload:      fs.Int("max-payload-bytes", host.DefaultMaxPayloadBytes, "largest input, step value, result or promise value"),
		ops:          fs.Int("max-ops", host.DefaultMaxOps, "most durable ops per run"),
		journalOps:   fs.Int("max-journal-ops", host.DefaultMaxJournalOps, "most durable ops in one run's journal (a workflow that loops for long continues as new: skein.ContinueAsNew)"),
		tasks:        fs.Int("max-tasks", host.DefaultMaxTasks, "most live tasks (skein.Go, parallel branches) per run"),
		childDepth:   fs.Int("max-child-depth", host.DefaultMaxChildDepth, "deepest tree of child runs (a started run is depth 0)"),
		children:     fs.Int("max-children", host.DefaultMaxChildren, "most child runs one run starts"),
		modules:      addModuleFlags(fs), // moduleflags.go
		http:         addHTTPFlags(fs),   // httpflags.go
	}
	if withModule {
		l.module = fs.Int64("max-module-bytes", host.DefaultMaxModuleBytes, "largest module accepted")
	}
	return l
}

// apply sets the limits in cfg.
func (l *limitFlags) apply(cfg *host.Config) {
	if *l.memoryMiB > 0 {
		cfg.MemoryLimitPages = uint32(min(*l.memoryMiB, 4<<10) * 16) // wasm32: at most 4 GiB
	}
	cfg.MaxRunWithoutYield = *l.withoutYield
	cfg.MaxExecutionTime = *l.execTime
	cfg.MaxExecutionCPU = *l.execCPU
	cfg.MaxPayloadBytes = *l.payload
	cfg.MaxOps = *l.ops
	cfg.MaxJournalOps = *l.journalOps
	cfg.MaxTasks = *l.tasks
	cfg.MaxChildDepth = *l.childDepth
	cfg.MaxChildren = *l.children
	if l.module != nil {
		cfg.MaxModuleBytes = int(*l.module)
	}
	l.modules.apply(cfg)
	l.http.apply(cfg)
}
