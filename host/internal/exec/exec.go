package exec

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	rand2 "math/rand/v2"
	"strings"
	"time"

	"github.com/skeinrun/skein/host/internal/metrics"
	"github.com/skeinrun/skein/host/internal/modules"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/limit"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// execState is how an execution (one wasm instance of a run) ended.
type State int

const (
	Running     State = iota
	Done              // the root task finished (the run completed or failed by its own result)
	Failed            // the guest broke (trap, exit, misuse) or the host failed
	Diverged          // replay found a code change or nondeterminism
	Evicted           // dropped to be replayed at once (EvictAlways)
	Suspended         // dropped until a timer or a settlement
	stDescribed       // describe mode ended
	Stopped           // stopped by a cancellation it did not take in time (watchdog.go)
	// stUnrecorded: a commit of the execution's records failed. The drive
	// returns the error and the run is not failed: what was committed
	// before stands, and the next drive replays it.
	Unrecorded
	// Paused: the run was paused (host.Pause); the execution stopped at
	// an idle point, or was stopped after CancelGrace, and its records
	// are committed. The run keeps its status until it is unpaused.
	Paused
)

// exec is one instance of a run's module, from instantiation to exit.
type Exec struct {
	h         Host
	describe  bool
	rs        *RunState
	S         *sched.Sched
	mem       engine.Memory // the instance's memory, during a host function call
	out       []byte        // encode buffer
	pending   []byte        // message waiting for take
	Stderr    stderrBuffer
	Workflows []string
	Described bool
	// inputSchemas are the input schemas a describe run was given.
	InputSchemas map[string]json.RawMessage
	// opSchema is the schema of the promise being recorded pending.
	opSchema []byte

	State      State
	Failure    error
	Result     sched.Outcome
	newRecords int   // records made by this execution
	VSleep     int64 // virtual time added by sleeps in workflow code
	fnNames    map[string]string

	fx effects // what the execution asks of the world (effects.go); nil when describing
	// tracer emits the spans of the work it records (tracing.go); nil:
	// tracing off, or a world that commits nothing.
	tracer Tracer

	selecting map[sched.TaskID]int           // tasks waiting in a Select, with the number of futures (for effects.observed)
	nextOpts  map[sched.TaskID]abi.OpOptions // op_options for the task's next op
	fed       fedState                       // the last feed, until the guest reports its use (feed.go)
	bodies    map[sched.PromiseID]*stepBody  // step bodies running with options
	canceled  bool                           // the cancellation was delivered and handled
	opStarts  map[string]int64               // ops this execution issued first: key -> wall-clock start (timeline.go)
	LastSeq   int64                          // the highest settle sequence in the journal so far
	// Ran is the execution's running time once Instantiate returns, as
	// MaxExecutionCPU counts it: its wall time less the time it blocked
	// (watchdog.go, blocking).
	Ran time.Duration
	ctr *metrics.Exec // the run's namespace's counters (nil: a describe's, none)

	// limits (limits.go)
	wd        watchState      // read by the watchdog (watchdog.go)
	base      context.Context // the execution's context without the watchdog, for work that outlives it
	ops       int             // ops issued, against Config.MaxOps
	liveTasks int             // tasks started and not done (the root excluded), against Config.MaxTasks
	childOps  int             // child ops issued, against Config.MaxChildren
	// journalOps counts durable ops issued (replayed ones included),
	// against Config.MaxJournalOps (continue.go).
	journalOps int
	// continued is the successor's input once the run continued as new
	// (continue_as_new); nil otherwise.
	Continued []byte
}

// stepBody is a step body running under a retry policy or timeout.
type stepBody struct {
	opts  abi.OpOptions
	start time.Time // of the current attempt
}

type execKey struct{}

func NewDescribe(h Host) *Exec {
	return &Exec{h: h, describe: true, S: sched.New(sched.Options{Now: realNow, StartTime: 1}, nil)}
}

// newExec is an execution of the run of rs in its world, replaying
// recorded. A verifying replay's world (verifyWorld) leaves a step
// recorded pending pending: its body does not run.
func NewExec(h Host, rs *RunState, recorded []sched.Record) *Exec {
	_, verify := rs.World.(VerifyWorld)
	x := &Exec{h: h, rs: rs, fnNames: map[string]string{}, LastSeq: maxSeq(recorded), ctr: h.Counters(rs.Run.ID)}
	x.fx = rs.World.effects(x)
	if x.fx.commits() {
		x.tracer = h.Config().Tracer
	}
	x.S = sched.New(sched.Options{
		Now:               x.fx.now,
		StartTime:         rs.Run.StartTime,
		OnRecord:          x.record,
		Minting:           h.Hooks().Minting,
		ReplayInline:      h.Hooks().ReplayInline,
		LeavePendingSteps: verify,
	}, recorded)
	return x
}

func realNow() int64 { return time.Now().UnixNano() }

// noCounters take what an execution that is not a run's (a module's
// describe) would count: nothing of it is a namespace's.
var noCounters metrics.Exec

// counters are the counters of the run's namespace (Host.Counters),
// looked up once as the execution is made.
func (x *Exec) counters() *metrics.Exec {
	if x.ctr == nil {
		return &noCounters
	}
	return x.ctr
}

// record queues a journal record for the next flush.
func (x *Exec) record(r sched.Record) {
	x.newRecords++
	x.counters().OpsRecorded.Add(1)
	o := ToStore(r)
	x.stamp(&o, r)
	if r.Pending {
		o.Schema = x.opSchema
	}
	x.rs.Batch.Outcomes = append(x.rs.Batch.Outcomes, store.RunOutcome{RunID: x.rs.Run.ID, Outcome: o})
	x.fx.recorded(o, r)
	if x.tracer != nil && !r.Pending {
		x.opSpan(o)
	}
}

// Instantiate runs one execution to its end.
func (x *Exec) Instantiate(ctx context.Context, cm *modules.Module) error {
	h := x.h
	out := x.guestOutput()
	if c, ok := out.(io.Closer); ok {
		defer func() {
			if err := c.Close(); err != nil {
				h.Log().Warn("closing the guest's output failed", "err", err)
			}
		}()
	}
	if out != io.Discard {
		x.Stderr.also = out
	}
	ctx = context.WithValue(ctx, execKey{}, x)
	defer h.Instance()()
	x.base = ctx
	// The watchdog (watchdog.go) cancels wctx, and with it the guest, when
	// workflow code runs too long without calling into the host.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopWatch := x.watch(cancel)
	ran := time.Now()
	err := h.Engine().Run(wctx, cm.Engine(), engine.RunConfig{
		Args:      []string{"workflow"},
		Stdout:    out,
		Stderr:    &x.Stderr,
		Walltime:  x.walltime,
		Nanotime:  x.nanotime,
		Nanosleep: x.nanosleep,
		Rand:      x.randSource(),
		Reused:    func() { x.counters().Reused.Add(1) },
	})
	stopWatch()
	x.Ran = max(time.Since(ran)-time.Duration(x.wd.waited.Load()), 0)
	var limit *limit.Error
	var hc *hardCancel
	var hp *hardPause
	switch cause := context.Cause(wctx); {
	case x.State != Running && x.State != Failed:
	case errors.As(cause, &limit):
		x.State, x.Failure = Failed, limit
	case errors.As(cause, &hc):
		x.State, x.Failure = Stopped, hc
	case errors.As(cause, &hp):
		x.State, x.Failure = Paused, hp
	}
	if x.State == Running {
		x.State = Failed
		switch {
		case ctx.Err() != nil:
			x.Failure = fmt.Errorf("interrupted: %w", ctx.Err())
		case err == nil:
			x.Failure = errors.New("the module exited before the workflow finished (does main call skein.Main?)")
		default:
			x.Failure = h.MemoryError(errors.New(ExitDetail(err, x.Stderr.String())), x.Stderr.oom)
		}
	}
	if errors.Is(err, ErrEnded) {
		return nil // a host function ended it: x.state says how
	}
	return err
}

// guestOutput is where the execution's stdout and stderr go.
func (x *Exec) guestOutput() io.Writer {
	h := x.h
	if h.Config().GuestOutputFor == nil {
		return h.Config().GuestOutput
	}
	run := ""
	if x.rs != nil {
		run = x.rs.Run.ID
	}
	if w := h.Config().GuestOutputFor(run); w != nil {
		return w
	}
	return io.Discard
}

// exitDetail describes how a guest ended on its own.
func ExitDetail(err error, stderr string) string {
	msg := "the module trapped: " + err.Error()
	if ee := (*engine.ExitError)(nil); errors.As(err, &ee) {
		msg = ee.Error()
	}
	if s := strings.TrimSpace(stderr); s != "" {
		msg += "\n" + s
	}
	return msg
}

// Virtual clocks: the run's virtual time, advanced at recorded points and
// by sleeps in workflow code. The monotonic clock never returns 0.
func (x *Exec) walltime() (int64, int32) {
	t := x.S.VNow() + x.VSleep
	return t / 1e9, int32(t % 1e9)
}

func (x *Exec) nanotime() int64 {
	start := int64(1)
	if x.rs != nil {
		start = x.rs.Run.StartTime
	}
	return x.S.VNow() - start + x.VSleep + 1e9
}

func (x *Exec) nanosleep(ns int64) {
	if ns > 0 {
		x.VSleep += ns
	}
}

func (x *Exec) randSource() *rand2.ChaCha8 {
	var seed [32]byte
	if x.rs != nil {
		binary.LittleEndian.PutUint64(seed[:], x.rs.Run.Seed)
	}
	copy(seed[8:], "skein-wasi-random")
	return rand2.NewChaCha8(seed)
}

// ErrEnded is what a host function returns once its execution has
// ended (stop): the engine stops the guest, and x.state and x.failure
// say how the execution ended.
var ErrEnded = errors.New("the execution ended")

// stop ends the execution from inside a host function, which returns
// the error stop returns.
func (x *Exec) stop(st State, err error) error {
	if x.State == Running {
		x.State, x.Failure = st, err
	}
	return ErrEnded
}

// fail ends the execution with a guest fault or host error.
func (x *Exec) fail(format string, args ...any) error {
	return x.stop(Failed, fmt.Errorf(format, args...))
}

// schedErr ends the execution after an error from the scheduler: a code
// change or nondeterminism diverges the run, anything else fails it.
func (x *Exec) schedErr(err error) error {
	var cm *sched.CodeMismatchError
	var nd *sched.NondeterminismError
	if errors.As(err, &cm) || errors.As(err, &nd) {
		return x.stop(Diverged, err)
	}
	return x.stop(Failed, err)
}

// stderrBuffer keeps the first stderrHead and the last stderrTail bytes
// written to it: a Go guest that dies prints its fatal error and the
// failing goroutine first, and then every other goroutine, which can be
// long. It also notes whether "out of memory" was ever written, which
// memoryError reads.
type stderrBuffer struct {
	head []byte
	b    []byte // the tail
	cut  bool   // bytes were dropped between head and tail
	also interface{ Write([]byte) (int, error) }
	oom  bool
}

const (
	stderrHead = 4 << 10
	stderrTail = 12 << 10
)

// oomText is what a Go guest's runtime prints when the heap cannot grow.
const oomText = "out of memory"

func (t *stderrBuffer) Write(p []byte) (int, error) {
	written := len(p)
	if t.also != nil {
		_, _ = t.also.Write(p) // a copy for the operator's output: its failure must not fail the run
	}
	if !t.oom {
		carry := t.b[max(0, len(t.b)-len(oomText)+1):] // the text may straddle two writes
		if len(t.b) == 0 {
			carry = t.head[max(0, len(t.head)-len(oomText)+1):]
		}
		t.oom = strings.Contains(string(carry)+string(p), oomText)
	}
	if n := min(len(p), stderrHead-len(t.head)); n > 0 {
		t.head = append(t.head, p[:n]...)
		p = p[n:]
	}
	t.b = append(t.b, p...)
	if len(t.b) > stderrTail {
		t.b = append(t.b[:0], t.b[len(t.b)-stderrTail:]...)
		t.cut = true
	}
	return written, nil
}

// String returns the head and the tail, with a line that says where
// bytes were left out.
func (t *stderrBuffer) String() string {
	if t.cut {
		return string(t.head) + "\n[… stderr cut …]\n" + string(t.b)
	}
	return string(t.head) + string(t.b)
}

// Run is the run the execution runs (the zero Run when describing).
func (x *Exec) Run() store.Run {
	if x.rs == nil {
		return store.Run{}
	}
	return x.rs.Run
}
