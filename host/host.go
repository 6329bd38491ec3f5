// Package host runs skein workflow modules on wazero: it compiles and
// caches modules, sandboxes each run, implements the ABI v1 host
// functions, mints every op id from task lineage, records every outcome in
// a store, and resumes runs by replay.
package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host/internal/checklink"
	"github.com/skeinrun/skein/host/internal/cron"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/limit"
	"github.com/skeinrun/skein/host/internal/metrics"
	"github.com/skeinrun/skein/host/internal/modules"

	"github.com/skeinrun/skein/host/internal/journalcache"
	"github.com/skeinrun/skein/host/internal/taskboard"
	"github.com/skeinrun/skein/host/internal/tracing"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/egress"
	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// Errors a caller can test with errors.As; they come from package sched.
type (
	// CodeMismatchError: replay found a different function at a recorded key.
	CodeMismatchError = sched.CodeMismatchError
	// NondeterminismError: replay departed from the recorded journal.
	NondeterminismError = sched.NondeterminismError
)

// Evict is the policy for dropping a run's instance while it waits.
type Evict string

// Eviction policies.
const (
	// EvictNever keeps the instance until the run ends; a run that waits
	// only on things nothing in this process can settle is suspended.
	EvictNever Evict = "never"
	// EvictIdle drops the instance (the run is suspended) when every task
	// waits on something that will not settle within Config.IdleThreshold.
	EvictIdle Evict = "idle"
	// EvictAlways drops the instance and replays the run from the top at
	// every point where all tasks wait on durable promises, and suspends
	// the run like EvictIdle. For tests.
	EvictAlways Evict = "always"
)

// ParseEvict parses a policy name.
func ParseEvict(s string) (Evict, error) {
	switch e := Evict(s); e {
	case EvictNever, EvictIdle, EvictAlways:
		return e, nil
	}
	return "", fmt.Errorf("unknown eviction policy %q (want never, idle or always)", s)
}

// Config configures a Host.
type Config struct {
	// Store holds modules, runs and outcomes. Required.
	Store store.Store
	// CacheDir, if set, keeps compiled modules on disk across processes.
	CacheDir string
	// Evict is the eviction policy; default EvictIdle.
	Evict Evict
	// IdleThreshold: with EvictIdle, a run whose next possible settlement
	// is further away than this is suspended. Default 1s.
	IdleThreshold time.Duration
	// MemoryLimitPages caps each instance's linear memory in 64 KiB pages.
	// Default 4096 (256 MiB). A run whose guest runs out of it fails with
	// an error naming the limit (see docs/limits.md).
	MemoryLimitPages uint32
	// MaxRunWithoutYield is the longest workflow code may run without
	// calling into the host; a run past it (an infinite loop) is stopped
	// and fails. Default 5s; negative turns the watchdog off. It needs
	// interrupts (DisableInterrupt false) to stop the guest.
	MaxRunWithoutYield time.Duration
	// MaxChildDepth caps how deep a tree of child runs may grow: a run a
	// caller started is depth 0, its children 1. Default 8.
	MaxChildDepth int
	// MaxChildren caps the child runs one run starts. Default 1,000.
	MaxChildren int
	// MaxExecutionTime caps the wall time of one execution (one instance
	// of a run, from instantiation to its end, waits included). Default
	// 24h; negative turns it off. A run over it fails with a LimitError.
	MaxExecutionTime time.Duration
	// MaxExecutionCPU caps the time one execution spends running: guest
	// code and host calls that return at once, but not waiting at idle
	// points, in step-body sleeps or for the store. Default 10m; negative
	// turns it off. A run over it fails with a LimitError.
	MaxExecutionCPU time.Duration
	// MaxPayloadBytes caps every value a guest hands the host (step
	// values and errors, task results, call and child inputs) and run
	// inputs and promise values given to Start and Resolve. Default 4 MiB.
	MaxPayloadBytes int
	// MaxOps caps the durable ops one execution of a run issues, replayed
	// ones included (so, the ops of the whole run). Default 1,000,000.
	MaxOps int
	// MaxJournalOps caps the durable ops (steps, calls, sleeps, promises,
	// child runs) of one run's journal: a run past it fails with an error
	// that suggests skein.ContinueAsNew, which starts a successor run with
	// an empty journal. Default 50,000.
	MaxJournalOps int
	// MaxTasks caps the tasks (skein.Go, parallel branches) of a run alive
	// at once. Default 10,000.
	MaxTasks int
	// MaxModuleBytes caps a module given to Deploy. Default 64 MiB.
	MaxModuleBytes int
	// ModuleLimits bound a module's structure, checked before it is
	// compiled (modlimits.go).
	ModuleLimits ModuleLimits
	// CompileTimeout bounds the compilation of a module given to Deploy;
	// the deploy fails when it passes. Default 1m; negative: none.
	// Modules loaded from the store to run are compiled without one.
	CompileTimeout time.Duration
	// MaxConcurrentCompiles caps the compilations in progress at once
	// (deploys and loads of stored modules); the others wait. Default
	// DefaultMaxConcurrentCompiles().
	MaxConcurrentCompiles int
	// MaxConcurrentDeploys caps the Deploy calls in progress at once
	// (each holds its module in memory); the others wait. Default 2.
	MaxConcurrentDeploys int
	// MaxCompiledBytes bounds the estimated memory of the compiled
	// modules the host keeps; the least recently used ones no execution
	// uses are evicted past it (and compiled again, or loaded from
	// CacheDir, when next needed). Default 512 MiB; negative: no bound.
	MaxCompiledBytes int64
	// MaxStoredModuleBytes is a quota on the bytes of all the modules in
	// the store: a deploy that would go past it fails. Default 4 GiB;
	// negative: none.
	MaxStoredModuleBytes int64
	// GuestOutput receives what workflow code writes to stdout and stderr
	// (on every replay too). Default: discarded.
	GuestOutput io.Writer
	// GuestOutputFor, if set, is asked at each execution for the writer
	// of its stdout and stderr, instead of GuestOutput: run is the run's
	// id ("" when a module is described at deploy). The host closes the
	// writer when the execution ends if it is an io.Closer.
	GuestOutputFor func(run string) io.Writer
	// LimitHint, if set, tells the user where a limit is set: it is
	// given the Config field a LimitError names ("MaxOps",
	// "ModuleLimits.MaxNesting") and its answer ends the message (skein's
	// CLI answers with its flag, "--max-ops"). Default: no hint.
	LimitHint func(field string) string
	// Logger receives the host's logs. Default: slog.Default().
	Logger *slog.Logger
	// Interruptible makes a cancelled context stop running guest code at
	// once (wazero's WithCloseOnContextDone), at a cost in guest speed
	// (see RATIONALE.md). Default true; set DisableInterrupt to turn off.
	DisableInterrupt bool
	// DisableMemoryImages turns off the copy-on-write images of a
	// module's initial memory (Linux): instances copy its data segments
	// instead. For comparisons; see docs/PERFORMANCE.md.
	DisableMemoryImages bool
	// DisableSnapshots runs a reactor module's start-up (_initialize) in
	// every instance instead of starting instances from the module's
	// state after one run of it (abi/README.md, "Start-up and
	// snapshots"). Modules built as commands always run their start-up.
	DisableSnapshots bool
	// DisableInstanceReuse closes every instance when its execution
	// ends. By default an instance of a snapshotted module whose state
	// can be reset is reset to the snapshot and reused by the module's
	// next execution (docs/PERFORMANCE.md, "Reused instances").
	DisableInstanceReuse bool
	// JournalCacheBytes bounds the journals the host keeps in memory for
	// the runs it drove, so that a run it suspended or evicted replays
	// without reading its journal from the store, and a verifying replay
	// (Replay) of a completed, canceled or continued run reads it once
	// (docs/PERFORMANCE.md, "Journals kept in memory"). 0 means
	// DefaultJournalCacheBytes (64 MiB); a negative value keeps none.
	JournalCacheBytes int64

	// Retention is how long a run that ended is kept: Work's pruner
	// deletes the runs that ended longer ago, with all that belongs to
	// them, unless a run that has not ended needs them (Prune; the rules
	// are store.PruneStore's). Default DefaultRetention (30 days);
	// negative keeps every run. `skein serve --retention`.
	Retention time.Duration
	// PruneEvery is how often Work's pruner looks for runs to delete,
	// moved at random by up to a fifth. Default DefaultPruneEvery (5m).
	PruneEvery time.Duration
	// Clock is the pruner's clock: the horizon is Clock() - Retention.
	// Default time.Now; tests and benchmarks drive their own.
	Clock func() time.Time

	// Simulation, if set, runs every workflow in virtual time only, with
	// timing decided by a seed (see Simulation). For checks and tests.
	Simulation *Simulation

	// RequireGrants: a module may call only the activities granted to it
	// with Host.Grant; a module with no grant may call none. When false
	// (the default), only a module with a grant is restricted.
	RequireGrants bool

	// RemoteActivities: a call of an activity that no function registered
	// in this process serves becomes an activity task in the store, for
	// workers in other processes to claim (ClaimTasks; docs/activities.md).
	// When false (the default) such a call fails the run. `skein serve`
	// sets it.
	RemoteActivities bool
	// TaskLeaseTTL is how long a worker holds a claimed task without a
	// heartbeat; an attempt whose lease ends is failed with a timeout
	// error and retried by the op's policy. Default 30s.
	TaskLeaseTTL time.Duration

	// HookSecrets looks up the named secrets of webhooks
	// (HookOptions.Secret): a secret's value and whether it is set.
	// `skein serve --hook-secrets FILE` reads them from a file. Nil: no
	// hook may name a secret (docs/schedules.md).
	HookSecrets func(name string) (string, bool)

	// The built-in HTTP activity, activity.HTTPActivity (httpactivity.go;
	// docs/activities.md).

	// HTTPAllow lists the hosts the HTTP activity may reach: "host" (any
	// port) or "host:port" ("[::1]:8080" for IPv6). A special-purpose
	// address (link-local, cloud metadata, reserved, or a form embedding
	// such an IPv4 address; docs/activities.md) is reached only when
	// named here itself. Empty (the default): none; every request fails,
	// naming the host.
	HTTPAllow []string
	// HTTPTimeout bounds one request of the HTTP activity, redirects and
	// body included. Default 30s.
	HTTPTimeout time.Duration
	// HTTPMaxResponseBytes bounds a response of the HTTP activity as it
	// is recorded: its headers' names and values and its body, together.
	// Default 1 MiB.
	HTTPMaxResponseBytes int64
	// HTTPMaxConcurrentPerRun bounds the HTTP activity's requests in
	// progress for one run in this process, HTTPMaxConcurrent all of
	// them; more wait for one to end (while their call's context
	// lasts). Defaults 16 and 256.
	HTTPMaxConcurrentPerRun int
	HTTPMaxConcurrent       int
	// APIAddrs are the addresses and ports this process serves an API on
	// (`skein serve` sets its listener's): the HTTP activity never
	// reaches them, whatever HTTPAllow names, so a module cannot drive
	// the API that runs it. An unspecified address (0.0.0.0, ::) stands
	// for every address of this machine at its port. APIName names that
	// API in the denials (default "the host's API").
	APIAddrs []netip.AddrPort
	APIName  string
	// HTTPResolver resolves the host names of the HTTP activity's
	// requests; nil: the system's resolver. The addresses it gives are
	// checked like any (docs/activities.md).
	HTTPResolver HTTPResolver
	// GoMemory gives instances wazero's default linear memory (a Go
	// slice, copied when it grows) instead of the reserve-then-commit
	// allocator (host/internal/engine/memory_unix.go). For comparisons
	// (benchmarks): production hosts leave it off.
	GoMemory bool
	// TracerProvider, if set, receives the host's OpenTelemetry spans: a
	// span per run, per execution, per durable op and per attempt of an
	// activity call (docs/observability.md). Build it with
	// sdktrace.WithIDGenerator(TraceIDGenerator()), so that the spans
	// of a run emitted by different processes join. Nil (the default):
	// no tracing, at the cost of a nil check.
	TracerProvider trace.TracerProvider
	// Engine names the WebAssembly engine: "wazero" (pure Go, the
	// default when empty) or "wasmtime" (Cranelift through cgo, only in
	// a binary built with -tags wasmtime; see docs/engines.md). --engine.
	Engine string
}

// Host runs workflow modules. It is safe for concurrent use.
type Host struct {
	cfg   Config
	hooks testHooks
	eng   engine.Engine // compiles and runs modules (host/internal/engine)
	log   *slog.Logger

	mu         sync.Mutex
	modules    *modules.Set // compiled modules and module records (host/internal/modules)
	activities map[string]activity.Func
	active     map[string]*runState // runs driven by this process
	// leased holds, for each run Work drives under a lease, the func that
	// stops that drive (lease.go).
	leased map[string]context.CancelCauseFunc
	// failures counts, for each run whose drives by Work failed in a
	// row, the failures (retry.go).
	failures map[string]int
	// slotRuns holds, for each schedule, the latest started slot whose
	// run this host has seen stored (scheduler.go).
	slotRuns map[string]int64
	owner    string // names this host in the leases Drive takes
	// preclaimed holds the leases of runs Start created leased to this
	// host, until their Drive takes them (startclaim.go).
	preclaimed map[string]store.ClaimedRun
	// childKeys holds the op key of each child run with a hashed id that
	// this process started, until the child's end is committed: the
	// child can end before its parent commits the op (runid.go).
	childKeys map[string]string
	wake      chan struct{}   // signals Work: new work may be due
	sim       *exec.Simulator // Config.Simulation

	keyUse  keyUse           // when this process last recorded each API key's use (keys.go)
	tasks   taskboard.Board  // remote activity tasks (tasks.go)
	specs   cron.Cache       // schedules' parsed cron expressions (host/internal/cron)
	emb     embedState       // grants, event subscriptions, Await waiters (embed.go)
	metrics *metrics.Metrics // counters for WriteMetrics (metrics.go)
	// registry is the host's own Prometheus registry of metrics (metrics.go).
	registry *prometheus.Registry
	xcfg     exec.Config // the settings executions read (exechost.go)
	// runsCountCap and runsCountPage bound the run counts of WriteMetrics.
	runsCountCap, runsCountPage int
	// journals is the journal cache in front of the store (nil: none).
	journals *journalcache.Store
	// tracer emits spans (tracing.go); nil: tracing off.
	tracer *tracing.Tracer

	deploySlots chan struct{}  // Config.MaxConcurrentDeploys (deploy.go)
	http        *egress.Client // the HTTP activity's (httpactivity.go)
	httpSlots   httpSlots      // its requests in progress (httpslots.go)
	quotaMu     sync.Mutex     // Config.MaxStoredModuleBytes: check and store one at a time

	// The drives of child runs a parent drives in this process
	// (driveChild) are Close's to stop: closing ends them, and Close waits
	// for them before it releases the runtime their instances run on.
	closed      bool // under mu
	closing     context.Context
	stopChilds  context.CancelFunc
	childDrives sync.WaitGroup
	owned       sync.WaitGroup // goroutines started by spawn
}

// testHooks let the package's tests change or watch a host's behaviour.
type testHooks struct {
	minting      sched.Minting         // the scheduler's id policy (a broken one, for the checker's tests: checklink.Link)
	replayInline bool                  // a replay that hands every recorded value back at once (checklink.Link)
	onBody       func(run, key string) // called before each step body runs
	onExec       func(run string)      // called at each instantiation of a run
	// verifyJournals checks every journal the cache answers from memory
	// against the store (the package's tests, journalcache.New).
	verifyJournals bool
	// runsCountCap and runsCountPage replace WriteMetrics' bounds of the
	// run counts, when set.
	runsCountCap, runsCountPage int
	// engine is the engine of a host whose Config names none: the
	// package's tests set it from SKEIN_TEST_ENGINE, so that the whole
	// behavioural suite runs on either engine (make test-wasmtime).
	engine string
	// batchActions are batch actions beside the package's, by name.
	batchActions map[string]batchAction
}

// New creates a host. Close it when done.
func New(ctx context.Context, cfg Config) (*Host, error) {
	return newHost(ctx, cfg, testHooks{})
}

// newHost is New with test hooks. A context from the checker carries
// a link to fill in (checklink.go).
func newHost(ctx context.Context, cfg Config, hooks testHooks) (*Host, error) {
	link := checklink.From(ctx)
	hooks = linkHooks(link, hooks)
	if cfg.Store == nil {
		return nil, errors.New("host: Config.Store is required")
	}
	if cfg.Evict == "" {
		cfg.Evict = EvictIdle
	}
	if _, err := ParseEvict(string(cfg.Evict)); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	if cfg.TaskLeaseTTL <= 0 {
		cfg.TaskLeaseTTL = exec.DefaultTaskLeaseTTL
	}
	retentionDefaults(&cfg)
	if cfg.Engine == "" {
		cfg.Engine = hooks.engine
	}
	if err := CheckEngine(cfg.Engine); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	if cfg.IdleThreshold == 0 {
		cfg.IdleThreshold = time.Second
	}
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = 4096
	}
	cfg.setLimitDefaults()  // limits.go
	cfg.setModuleDefaults() // modlimits.go
	cfg.setHTTPDefaults()   // httpactivity.go
	httpClient, err := newHTTPClient(&cfg)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	if cfg.GuestOutput == nil {
		cfg.GuestOutput = io.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	eng, err := engine.New(ctx, cfg.Engine, engine.Config{
		HostModule:       abi.Module,
		HostFuncs:        exec.HostFuncs(), // hostfns.go
		CacheDir:         cfg.CacheDir,
		MemoryLimitPages: cfg.MemoryLimitPages,
		Interruptible:    !cfg.DisableInterrupt,
		NoMemoryImages:   cfg.DisableMemoryImages,
		NoSnapshots:      cfg.DisableSnapshots,
		NoRecycling:      cfg.DisableInstanceReuse,
		InitTimeout:      cfg.MaxRunWithoutYield,
		SliceMemory:      cfg.GoMemory,
	})
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	h := &Host{cfg: cfg, hooks: hooks, eng: eng, log: cfg.Logger,
		activities: map[string]activity.Func{},
		active:     map[string]*runState{}, leased: map[string]context.CancelCauseFunc{}, failures: map[string]int{},
		owner: defaultOwner(), wake: make(chan struct{}, 1),
		deploySlots: make(chan struct{}, cfg.MaxConcurrentDeploys),
		http:        httpClient, httpSlots: newHTTPSlots(&cfg)}
	h.closing, h.stopChilds = context.WithCancel(context.Background())
	if cfg.Simulation != nil {
		h.sim = exec.NewSimulator(cfg.Simulation.exec())
	}
	h.modules = modules.New(modules.Config{Engine: eng, Store: cfg.Store, Log: cfg.Logger, MaxCompiledBytes: cfg.MaxCompiledBytes,
		MaxConcurrentCompiles: cfg.MaxConcurrentCompiles, Structure: cfg.structureLimits(), MaxRunWithoutYield: cfg.MaxRunWithoutYield,
		Hints: limit.Hints(cfg.LimitHint)})
	h.metrics = metrics.NewMetrics()
	h.cfg.Store = metrics.TimedStore{Store: cfg.Store, M: h.metrics} // times commits (metrics.go)
	if cfg.JournalCacheBytes == 0 {
		cfg.JournalCacheBytes = DefaultJournalCacheBytes
	}
	if cfg.JournalCacheBytes > 0 {
		h.journals = journalcache.New(h.cfg.Store, cfg.JournalCacheBytes, hooks.verifyJournals)
		h.cfg.Store = h.journals
	}
	h.xcfg = h.execConfig()
	h.setTracer() // tracing.go
	h.registry = h.newRegistry()
	h.runsCountCap, h.runsCountPage = cmp.Or(hooks.runsCountCap, defaultRunsCountCap), cmp.Or(hooks.runsCountPage, defaultRunsCountPage)
	h.fillLink(link)
	return h, nil
}

// RegisterActivity makes fn callable from workflows as skein.Call(ctx, name, …).
// Names that start with ReservedActivityPrefix ("skein.") are the host's
// built-in activities: registering one is a programming error, and
// RegisterActivity panics, naming the rule (like net/http's ServeMux on a
// bad pattern).
func (h *Host) RegisterActivity(name string, fn activity.Func) {
	if err := checkActivityName(name); err != nil {
		panic(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.activities[name] = fn
}

func (h *Host) activity(name string) activity.Func {
	if fn := h.builtinActivity(name); fn != nil {
		return fn
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.activities[name]
}

// Deploy validates a module (it must be wasm within Config.ModuleLimits,
// compile within Config.CompileTimeout, speak ABI v1 and register at
// least one workflow), stores it by the sha256 of its bytes within
// Config.MaxStoredModuleBytes and returns its record. name is qualified
// by its namespace (store/namespace.go), which then owns the module;
// "NS/" stores it unnamed in namespace NS, "" unnamed in namespace
// default. Deploying the same
// bytes again is idempotent. At most Config.MaxConcurrentDeploys deploys
// run at once; the others wait (while ctx lasts). A limit's error is a
// *ModuleError wrapping a *LimitError.
func (h *Host) Deploy(ctx context.Context, name string, wasm []byte) (store.Module, error) {
	label := moduleLabel(name)
	if err := h.checkModuleSize(label, int64(len(wasm))); err != nil {
		return store.Module{}, err
	}
	release, err := h.deploySlot(ctx, label)
	if err != nil {
		return store.Module{}, err
	}
	defer release()
	return h.deploy(ctx, name, label, wasm) // deploy.go
}

// signal tells Work that new work may be due.
func (h *Host) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// DefaultJournalCacheBytes is the default of Config.JournalCacheBytes.
const DefaultJournalCacheBytes = journalcache.DefaultBytes

// MaxCronLen is the longest cron expression a schedule may have, in
// bytes.
const MaxCronLen = cron.MaxLen
