package host

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

	"github.com/skeinrun/skein/host/internal/modules"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// execState is how an execution (one wasm instance of a run) ended.
type execState int

const (
	stRunning   execState = iota
	stDone                // the root task finished (the run completed or failed by its own result)
	stFailed              // the guest broke (trap, exit, misuse) or the host failed
	stDiverged            // replay found a code change or nondeterminism
	stEvicted             // dropped to be replayed at once (EvictAlways)
	stSuspended           // dropped until a timer or a settlement
	stDescribed           // describe mode ended
	stStopped             // stopped by a cancellation it did not take in time (watchdog.go)
	// stUnrecorded: a commit of the execution's records failed. The drive
	// returns the error and the run is not failed: what was committed
	// before stands, and the next drive replays it.
	stUnrecorded
)

// exec is one instance of a run's module, from instantiation to exit.
type exec struct {
	h         *Host
	describe  bool
	rs        *runState
	s         *sched.Sched
	mem       engine.Memory // the instance's memory, during a host function call
	out       []byte        // encode buffer
	pending   []byte        // message waiting for take
	stderr    stderrBuffer
	workflows []string
	described bool
	// inputSchemas are the input schemas a describe run was given.
	inputSchemas map[string]json.RawMessage
	// opSchema is the schema of the promise being recorded pending.
	opSchema []byte

	state      execState
	failure    error
	result     sched.Outcome
	newRecords int   // records made by this execution
	vsleep     int64 // virtual time added by sleeps in workflow code
	fnNames    map[string]string

	fx effects // what the execution asks of the world (effects.go); nil when describing

	selecting map[sched.TaskID]int           // tasks waiting in a Select, with the number of futures (for effects.observed)
	nextOpts  map[sched.TaskID]abi.OpOptions // op_options for the task's next op
	fed       fedState                       // the last feed, until the guest reports its use (feed.go)
	bodies    map[sched.PromiseID]*stepBody  // step bodies running with options
	canceled  bool                           // the cancellation was delivered and handled
	opStarts  map[string]int64               // ops this execution issued first: key -> wall-clock start (timeline.go)
	lastSeq   int64                          // the highest settle sequence in the journal so far

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
	continued []byte
}

// stepBody is a step body running under a retry policy or timeout.
type stepBody struct {
	opts  abi.OpOptions
	start time.Time // of the current attempt
}

type execKey struct{}

func newDescribeExec(h *Host) *exec {
	return &exec{h: h, describe: true, s: sched.New(sched.Options{Now: realNow, StartTime: 1}, nil)}
}

// newExec is an execution of the run of rs in its world, replaying
// recorded. A verifying replay's world (verifyWorld) leaves a step
// recorded pending pending: its body does not run.
func newExec(h *Host, rs *runState, recorded []sched.Record) *exec {
	_, verify := rs.world.(verifyWorld)
	x := &exec{h: h, rs: rs, fnNames: map[string]string{}, lastSeq: maxSeq(recorded)}
	x.fx = rs.world.effects(x)
	x.s = sched.New(sched.Options{
		Now:               x.fx.now,
		StartTime:         rs.run.StartTime,
		OnRecord:          x.record,
		Minting:           h.hooks.minting,
		ReplayInline:      h.hooks.replayInline,
		LeavePendingSteps: verify,
	}, recorded)
	return x
}

func realNow() int64 { return time.Now().UnixNano() }

// record queues a journal record for the next flush.
func (x *exec) record(r sched.Record) {
	x.newRecords++
	x.h.metrics.opsRecorded.Add(1)
	o := toStore(r)
	x.stamp(&o, r)
	if r.Pending {
		o.Schema = x.opSchema
	}
	x.rs.batch.Outcomes = append(x.rs.batch.Outcomes, store.RunOutcome{RunID: x.rs.run.ID, Outcome: o})
	x.fx.recorded(o, r)
}

// instantiate runs one execution to its end.
func (h *Host) instantiate(ctx context.Context, cm *modules.Module, x *exec) error {
	out := h.guestOutput(x)
	if c, ok := out.(io.Closer); ok {
		defer func() {
			if err := c.Close(); err != nil {
				h.log.Warn("closing the guest's output failed", "err", err)
			}
		}()
	}
	if out != io.Discard {
		x.stderr.also = out
	}
	ctx = context.WithValue(ctx, execKey{}, x)
	defer h.metrics.instance()()
	x.base = ctx
	// The watchdog (watchdog.go) cancels wctx, and with it the guest, when
	// workflow code runs too long without calling into the host.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopWatch := x.watch(cancel)
	err := h.eng.Run(wctx, cm.Engine(), engine.RunConfig{
		Args:      []string{"workflow"},
		Stdout:    out,
		Stderr:    &x.stderr,
		Walltime:  x.walltime,
		Nanotime:  x.nanotime,
		Nanosleep: x.nanosleep,
		Rand:      x.randSource(),
		Reused:    func() { h.metrics.reused.Add(1) },
	})
	stopWatch()
	var limit *LimitError
	var hc *hardCancel
	switch cause := context.Cause(wctx); {
	case x.state != stRunning && x.state != stFailed:
	case errors.As(cause, &limit):
		x.state, x.failure = stFailed, limit
	case errors.As(cause, &hc):
		x.state, x.failure = stStopped, hc
	}
	if x.state == stRunning {
		x.state = stFailed
		switch {
		case ctx.Err() != nil:
			x.failure = fmt.Errorf("interrupted: %w", ctx.Err())
		case err == nil:
			x.failure = errors.New("the module exited before the workflow finished (does main call skein.Main?)")
		default:
			x.failure = h.memoryError(errors.New(exitDetail(err, x.stderr.String())), x.stderr.oom)
		}
	}
	if errors.Is(err, errExecEnded) {
		return nil // a host function ended it: x.state says how
	}
	return err
}

// guestOutput is where the execution's stdout and stderr go.
func (h *Host) guestOutput(x *exec) io.Writer {
	if h.cfg.GuestOutputFor == nil {
		return h.cfg.GuestOutput
	}
	run := ""
	if x.rs != nil {
		run = x.rs.run.ID
	}
	if w := h.cfg.GuestOutputFor(run); w != nil {
		return w
	}
	return io.Discard
}

// exitDetail describes how a guest ended on its own.
func exitDetail(err error, stderr string) string {
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
func (x *exec) walltime() (int64, int32) {
	t := x.s.VNow() + x.vsleep
	return t / 1e9, int32(t % 1e9)
}

func (x *exec) nanotime() int64 {
	start := int64(1)
	if x.rs != nil {
		start = x.rs.run.StartTime
	}
	return x.s.VNow() - start + x.vsleep + 1e9
}

func (x *exec) nanosleep(ns int64) {
	if ns > 0 {
		x.vsleep += ns
	}
}

func (x *exec) randSource() *rand2.ChaCha8 {
	var seed [32]byte
	if x.rs != nil {
		binary.LittleEndian.PutUint64(seed[:], x.rs.run.Seed)
	}
	copy(seed[8:], "skein-wasi-random")
	return rand2.NewChaCha8(seed)
}

// errExecEnded is what a host function returns once its execution has
// ended (stop): the engine stops the guest, and x.state and x.failure
// say how the execution ended.
var errExecEnded = errors.New("the execution ended")

// stop ends the execution from inside a host function, which returns
// the error stop returns.
func (x *exec) stop(st execState, err error) error {
	if x.state == stRunning {
		x.state, x.failure = st, err
	}
	return errExecEnded
}

// fail ends the execution with a guest fault or host error.
func (x *exec) fail(format string, args ...any) error {
	return x.stop(stFailed, fmt.Errorf(format, args...))
}

// schedErr ends the execution after an error from the scheduler: a code
// change or nondeterminism diverges the run, anything else fails it.
func (x *exec) schedErr(err error) error {
	var cm *sched.CodeMismatchError
	var nd *sched.NondeterminismError
	if errors.As(err, &cm) || errors.As(err, &nd) {
		return x.stop(stDiverged, err)
	}
	return x.stop(stFailed, err)
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
