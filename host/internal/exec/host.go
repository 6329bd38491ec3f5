package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/limit"
	"github.com/skeinrun/skein/host/internal/metrics"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// Host is what an execution asks of the host that runs it: its settings,
// its log and counters, and the driver's services (runs created, driven
// and canceled, activities looked up, goroutines owned). Package host
// implements it; nothing in this package knows the driver's state.
type Host interface {
	// Config is the host's settings an execution reads; it does not change.
	Config() *Config
	Log() *slog.Logger
	// Counters are the host's counters an execution of the run runID adds
	// to: those of the run's namespace.
	Counters(runID string) *metrics.Exec
	// Instance is called as an instance starts; the func it returns as it ends.
	Instance() func()
	// Activated observes the activation latency of the execution of rs.
	Activated(rs *RunState)
	Engine() engine.Engine
	// Simulator is the host's simulation (Config.Simulation), or nil.
	Simulator() *Simulator
	Hooks() Hooks

	Cancel(ctx context.Context, runID, reason string) (store.Run, error)
	// Drive drives the run id with default options (a simulated child).
	Drive(ctx context.Context, runID string) (store.Run, error)
	// DriveChild has the child run id of rs's run driven on base,
	// unless it is being driven for the run already.
	DriveChild(base context.Context, rs *RunState, id string)
	CreateRun(ctx context.Context, r store.Run) (store.Run, error)
	// ChildRunID is the id of the child run the op at key of parent starts.
	ChildRunID(parent, key string) string
	// NoteChildKey remembers the op key of a child whose id is hashed.
	NoteChildKey(parent, id, key string)
	// RunDepth is the number of ancestors of r, counted up to limit+1.
	RunDepth(ctx context.Context, r store.Run, limit int) (int, error)
	// Spawn runs f on a goroutine the host owns (Close waits for it).
	Spawn(f func())
	// EmitRecord tells the host's observers of a journal record of r.
	EmitRecord(r store.Run, rec sched.Record)
	// Activity is the registered activity name, or nil.
	Activity(name string) activity.Func
	// SimActivity is the activity name under the simulation.
	SimActivity(name string) activity.Func
	// CheckGrant refuses an activity the module at hash was not granted.
	CheckGrant(ctx context.Context, hash, activity string) error
	// CancelCalls cancels the run's remote activity tasks in flight.
	CancelCalls(ctx context.Context, rs *RunState, reason string)
	PayloadError(what string, n int) *limit.Error
	// MemoryError is failure, with a hint when the guest ran out of memory.
	MemoryError(failure error, oom bool) error
}

// Config is the host's settings an execution reads (host.Config's
// fields of the same names).
type Config struct {
	Store              store.Store
	Evict              Evict
	IdleThreshold      time.Duration
	GuestOutput        io.Writer
	GuestOutputFor     func(runID string) io.Writer
	RemoteActivities   bool
	MaxOps             int
	MaxTasks           int
	MaxChildren        int
	MaxChildDepth      int
	MaxJournalOps      int
	MaxPayloadBytes    int
	MaxExecutionTime   time.Duration
	MaxExecutionCPU    time.Duration
	MaxRunWithoutYield time.Duration
	Hints              limit.Hints
	// Tracer emits the spans of new work; nil: tracing off (tracing.go).
	Tracer Tracer
}

// limitError is the error of the limit at field (Config.LimitHint's hint).
func (c *Config) limitError(what, field, value string) *limit.Error {
	return c.Hints.New(what, field, value)
}

// Evict is host.Evict: when a waiting run's instance is dropped.
type Evict string

// The eviction policies (host.EvictNever, …).
const (
	EvictNever  Evict = "never"
	EvictIdle   Evict = "idle"
	EvictAlways Evict = "always"
)

// Hooks let the host's tests change or watch an execution.
type Hooks struct {
	Minting      sched.Minting         // the scheduler's id policy
	ReplayInline bool                  // a replay that hands every recorded value back at once
	OnBody       func(run, key string) // called before each step body runs
}

// ErrTerminal is host.ErrTerminal: the run has ended.
var ErrTerminal = errors.New("the run has ended")

// CancelGrace is host.CancelGrace: how long a cancellation waits for a
// running execution to reach an idle point before it is stopped.
const CancelGrace = time.Second

// TimeoutReason is the cancellation reason of r's expired run timeout.
func TimeoutReason(r store.Run) string {
	return fmt.Sprintf("run timed out after %s", time.Duration(r.Deadline-r.CreatedAt.UnixNano()).Round(time.Millisecond))
}

// IsDivergence reports whether err is a CodeMismatchError or a
// NondeterminismError.
func IsDivergence(err error) bool {
	var cm *sched.CodeMismatchError
	var nd *sched.NondeterminismError
	return errors.As(err, &cm) || errors.As(err, &nd)
}
