package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	rand2 "math/rand/v2"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/lineage"
	"github.com/skeinrun/skein/sched"
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
)

// exec is one instance of a run's module, from instantiation to exit.
type exec struct {
	h         *Host
	describe  bool
	rs        *runState
	s         *sched.Sched
	mod       api.Module
	out       []byte // encode buffer
	pending   []byte // message waiting for take
	stderr    tailBuffer
	workflows []string
	described bool

	state      execState
	failure    error
	result     sched.Outcome
	newRecords int   // records made by this execution
	vsleep     int64 // virtual time added by sleeps in workflow code
	fnNames    map[string]string
	verify     bool // Replay: deliver only recorded outcomes, issue nothing new

	// simulation (Config.Simulation) only
	simWaits  map[string]int            // waits issued per step body attempt
	simRands  map[string]*rand2.ChaCha8 // real_rand streams per step body attempt
	simStarts map[string]int64          // clock when each step body attempt started in this execution

	nextOpts map[sched.TaskID]abi.OpOptions // op_options for the task's next op
	bodies   map[sched.PromiseID]*stepBody  // step bodies running with options
	canceled bool                           // the cancellation was delivered and handled

	// limits (limits.go)
	wd        watchState      // read by the watchdog (watchdog.go)
	base      context.Context // the execution's context without the watchdog, for work that outlives it
	ops       int             // ops issued, against Config.MaxOps
	liveTasks int             // tasks started and not done (the root excluded), against Config.MaxTasks
	childOps  int             // child ops issued, against Config.MaxChildren
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

func newExec(h *Host, rs *runState, recorded []sched.Record) *exec {
	x := &exec{h: h, rs: rs, fnNames: map[string]string{}}
	now := realNow
	if sim := rs.sim; sim != nil {
		now = func() int64 { return sim.clock }
	}
	x.s = sched.New(sched.Options{
		Now:          now,
		StartTime:    rs.run.StartTime,
		OnRecord:     x.record,
		Minting:      h.cfg.minting,
		ReplayInline: h.cfg.replayInline,
	}, recorded)
	return x
}

func realNow() int64 { return time.Now().UnixNano() }

// record queues a journal record for the next flush.
func (x *exec) record(r sched.Record) {
	x.newRecords++
	x.h.metrics.opsRecorded.Add(1)
	o := toStore(r)
	if x.rs.sim != nil {
		x.rs.sim.log = append(x.rs.sim.log, simRecord{out: o})
	}
	x.rs.batch.Outcomes = append(x.rs.batch.Outcomes, store.RunOutcome{RunID: x.rs.run.ID, Outcome: o})
	if !x.verify {
		x.h.emitRecord(x.rs.run, r)
	}
}

// instantiate runs one execution to its end.
func (h *Host) instantiate(ctx context.Context, cm *cachedModule, x *exec) error {
	out := h.guestOutput(x)
	if c, ok := out.(io.Closer); ok {
		defer c.Close()
	}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("workflow").
		WithStdout(out).
		WithStderr(&x.stderr).
		WithWalltime(x.walltime, 1).
		WithNanotime(x.nanotime, 1).
		WithNanosleep(x.nanosleep).
		WithOsyield(func() {}).
		WithRandSource(x.randSource())
	if out != io.Discard {
		x.stderr.also = out
	}
	ctx = withMemory(context.WithValue(ctx, execKey{}, x), cm.img) // linear memory: memory.go
	defer h.metrics.instance()()
	x.base = ctx
	// The watchdog (limits.go) cancels wctx, and with it the guest, when
	// workflow code runs too long without calling into the host.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopWatch := x.watch(cancel)
	mod, err := h.rt.InstantiateModule(wctx, cm.cm, cfg)
	stopWatch()
	if mod != nil {
		mod.Close(ctx)
	}
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
			x.failure = h.memoryError(errors.New(exitDetail(err, x.stderr.String())), x.stderr.String())
		}
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
	var ee *sys.ExitError
	msg := ""
	if errors.As(err, &ee) {
		msg = fmt.Sprintf("the module exited with code %d", ee.ExitCode())
	} else {
		msg = "the module trapped: " + err.Error()
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

// stop ends the execution from inside a host function.
func (x *exec) stop(ctx context.Context, st execState, err error) {
	if x.state == stRunning {
		x.state, x.failure = st, err
	}
	code := uint32(0)
	if st != stDone && st != stDescribed && st != stEvicted && st != stSuspended {
		code = 1
	}
	if x.mod != nil {
		x.mod.CloseWithExitCode(ctx, code)
	}
	panic(sys.NewExitError(code))
}

// fail ends the execution with a guest fault or host error.
func (x *exec) fail(ctx context.Context, format string, args ...any) {
	x.stop(ctx, stFailed, fmt.Errorf(format, args...))
}

// schedErr ends the execution after an error from the scheduler.
func (x *exec) schedErr(ctx context.Context, err error) {
	var cm *sched.CodeMismatchError
	var nd *sched.NondeterminismError
	if errors.As(err, &cm) || errors.As(err, &nd) {
		x.stop(ctx, stDiverged, err)
	}
	x.stop(ctx, stFailed, err)
}

func (x *exec) read(ctx context.Context, ptr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	b, ok := x.mod.Memory().Read(ptr, n)
	if !ok {
		x.fail(ctx, "guest passed an out-of-bounds buffer (offset %d, length %d)", ptr, n)
	}
	return b
}

// fnName reads a function name, interned to avoid an allocation per op.
func (x *exec) fnName(ctx context.Context, ptr, n uint32) string {
	b := x.read(ctx, ptr, n)
	if s, ok := x.fnNames[string(b)]; ok {
		return s
	}
	s := string(b)
	x.fnNames[s] = s
	return s
}

// reply hands a message to the guest: into its buffer if it fits, else
// kept for take.
func (x *exec) reply(ctx context.Context, buf, capacity uint32, msg []byte) uint64 {
	if uint32(len(msg)) <= capacity {
		if !x.mod.Memory().Write(buf, msg) {
			x.fail(ctx, "guest passed an out-of-bounds buffer (offset %d, capacity %d)", buf, capacity)
		}
		x.pending = nil
	} else {
		x.pending = append(x.pending[:0], msg...)
	}
	return uint64(len(msg))
}

func toABI(o sched.Outcome) abi.Outcome {
	if o.OK {
		return abi.Outcome{Status: abi.StatusOK, Data: o.Value}
	}
	return abi.Outcome{Status: abi.StatusError, Data: []byte(o.Err)}
}

func fromABI(status uint32, data []byte, panicOK bool) (sched.Outcome, bool) {
	switch status {
	case abi.StatusOK:
		return sched.Outcome{OK: true, Value: bytes.Clone(data)}, true
	case abi.StatusPanic:
		return sched.Outcome{Err: string(data)}, panicOK
	case abi.StatusError:
		return sched.Outcome{Err: string(data)}, true
	}
	return sched.Outcome{}, false
}

func toStore(r sched.Record) store.Outcome {
	o := store.Outcome{Key: r.Key, Kind: r.Kind, Function: r.Function, Seq: r.Seq, Waited: r.Waited,
		Idle: r.Idle, WakeOrder: r.WakeOrder, VTime: r.VTime, Deadline: r.Deadline, Attempts: r.Attempts, UpdatedAt: time.Now()}
	switch {
	case r.Pending:
		o.Status = store.OutcomePending
	case r.Outcome.OK:
		o.Status, o.Value = store.OutcomeOK, r.Outcome.Value
	default:
		o.Status, o.Error = store.OutcomeError, r.Outcome.Err
	}
	return o
}

func fromStore(o store.Outcome) sched.Record {
	r := sched.Record{Key: o.Key, Kind: o.Kind, Function: o.Function, Pending: o.Status == store.OutcomePending,
		Seq: o.Seq, Waited: o.Waited, Idle: o.Idle, WakeOrder: o.WakeOrder, VTime: o.VTime, Deadline: o.Deadline, Attempts: o.Attempts}
	if o.Status == store.OutcomeOK {
		r.Outcome = sched.Outcome{OK: true, Value: o.Value}
	} else if o.Status == store.OutcomeError {
		r.Outcome = sched.Outcome{Err: o.Error}
	}
	return r
}

// exportHostModule builds the "skein" host module shared by every run;
// each call finds its execution in the context.
func (h *Host) exportHostModule(ctx context.Context) error {
	b := h.rt.NewHostModuleBuilder(abi.Module)
	for name, fn := range hostFns { // limits.go
		sig, progress := hostSigs[name], progressFns[name]
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				x, _ := ctx.Value(execKey{}).(*exec)
				if x == nil {
					panic(fmt.Sprintf("skein host function %s called outside a skein execution", name))
				}
				hostCall(ctx, x, mod, name, progress, fn, stack)
			}), sig[0], sig[1]).
			Export(name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

func (x *exec) hello(ctx context.Context, stack []uint64) {
	x.h.metrics.activated(x.rs) // the first host call of an execution
	v := api.DecodeU32(stack[0])
	stack[0] = uint64(abi.Version)
	if v != abi.Version {
		x.stop(ctx, stFailed, fmt.Errorf("the module speaks skein ABI v%d; this host speaks ABI v%d", v, abi.Version))
	}
}

func (x *exec) announce(ctx context.Context, stack []uint64) {
	list := string(x.read(ctx, api.DecodeU32(stack[0]), api.DecodeU32(stack[1])))
	x.workflows = nil
	if list != "" {
		x.workflows = strings.Split(list, "\n")
	}
}

func (x *exec) invocation(ctx context.Context, stack []uint64) {
	if x.describe {
		x.described = true
		x.stop(ctx, stDescribed, nil)
	}
	run := x.rs.run
	found := false
	for _, w := range x.workflows {
		found = found || w == run.Workflow
	}
	if !found {
		x.stop(ctx, stFailed, fmt.Errorf("unknown workflow %q; the module registers: %s", run.Workflow, strings.Join(x.workflows, ", ")))
	}
	x.out = abi.AppendInvocation(x.out[:0], abi.Invocation{Mode: abi.ModeRun, Workflow: run.Workflow, Input: run.Input})
	stack[0] = x.reply(ctx, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), x.out)
}

func (x *exec) take(ctx context.Context, stack []uint64) {
	buf, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	if x.pending == nil || uint32(len(x.pending)) != n {
		x.fail(ctx, "guest called take(%d bytes) with no message of that size pending", n)
	}
	if !x.mod.Memory().Write(buf, x.pending) {
		x.fail(ctx, "guest passed an out-of-bounds buffer to take (offset %d, length %d)", buf, n)
	}
	x.pending = nil
	stack[0] = uint64(n)
}

func (x *exec) next(ctx context.Context, stack []uint64) {
	d := x.dispatch(ctx)
	r := abi.Resume{Task: uint32(d.Task)}
	if d.Start {
		r.Kind = abi.ResumeStart
	} else {
		r.Kind = abi.ResumeWake
		r.Promise = uint32(d.Promise)
		r.Outcome = toABI(d.Outcome)
	}
	x.out = abi.AppendResume(x.out[:0], r)
	stack[0] = x.reply(ctx, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), x.out)
}

func (x *exec) op(ctx context.Context, stack []uint64) {
	tid := sched.TaskID(api.DecodeU32(stack[0]))
	kind := abi.OpKind(api.DecodeU32(stack[1]))
	name := string(x.read(ctx, api.DecodeU32(stack[2]), api.DecodeU32(stack[3])))
	fn := x.fnName(ctx, api.DecodeU32(stack[4]), api.DecodeU32(stack[5]))
	arg := x.read(ctx, api.DecodeU32(stack[6]), api.DecodeU32(stack[7]))
	buf, capacity := api.DecodeU32(stack[8]), api.DecodeU32(stack[9])
	x.countOp(ctx)
	if kind == abi.OpChild {
		x.countChild(ctx)
	}
	if kind == abi.OpCall || kind == abi.OpChild {
		x.checkPayload(ctx, fmt.Sprintf("the input of %s op %q", kind, fn), len(arg))
	}

	var r abi.OpResult
	var err error
	switch kind {
	case abi.OpSpawn:
		var t sched.TaskID
		var p sched.PromiseID
		t, p, r.Key, err = x.s.Spawn(tid, name)
		r.Task, r.Promise = uint32(t), uint32(p)
		if err == nil {
			x.taskStarted(ctx)
		}
	case abi.OpFork:
		r.Promise, r.Key, err = x.s.Fork(tid, name)
	case abi.OpBranch:
		if len(arg) != 4 {
			x.fail(ctx, "branch op needs a 4-byte fork handle, got %d bytes", len(arg))
		}
		var t sched.TaskID
		var p sched.PromiseID
		t, p, r.Key, err = x.s.Branch(tid, binary.LittleEndian.Uint32(arg))
		r.Task, r.Promise = uint32(t), uint32(p)
		if err == nil {
			x.taskStarted(ctx)
		}
	case abi.OpStep, abi.OpCall, abi.OpSleep, abi.OpPromise, abi.OpChild:
		r, err = x.durableOp(ctx, tid, kind, name, fn, arg)
	default:
		x.fail(ctx, "unknown op kind %d", kind)
	}
	if err != nil {
		var idErr *lineage.StepIDError
		if !errors.As(err, &idErr) {
			x.schedErr(ctx, err)
		}
		r = abi.OpResult{State: abi.StateIDError, Scope: idErr.Scope, Name: idErr.Name, Rule: idErr.Rule, Message: idErr.Error()}
	}
	x.out = abi.AppendOpResult(x.out[:0], r)
	stack[0] = x.reply(ctx, buf, capacity, x.out)
}

func (x *exec) durableOp(ctx context.Context, tid sched.TaskID, kind abi.OpKind, name, fn string, arg []byte) (abi.OpResult, error) {
	opts, hasOpts := x.nextOpts[tid]
	if hasOpts {
		delete(x.nextOpts, tid)
		if kind != abi.OpStep && kind != abi.OpCall {
			x.fail(ctx, "retry and timeout options apply to steps and calls only, not to a %s op", kind)
		}
	}
	switch kind {
	case abi.OpSleep, abi.OpPromise:
		fn = kind.String()
	}
	if fn == "" {
		x.fail(ctx, "%s op without a function name", kind)
	}
	res, err := x.s.Op(tid, kind.String(), name, fn)
	if err != nil {
		return abi.OpResult{}, err
	}
	if x.rs.sim != nil {
		x.rs.sim.noteOp(res.Key, simOp{Kind: kind.String(), Function: fn, Task: x.s.TaskPath(tid)})
	}
	if x.verify && res.New {
		x.schedErr(ctx, &sched.NondeterminismError{Expected: "only recorded ops", Got: fmt.Sprintf("%s %q at key %q, which the journal does not record", kind, fn, res.Key)})
	}
	if x.verify && res.Pending != nil {
		// Recorded as pending: a verifying replay starts nothing.
		return abi.OpResult{Promise: uint32(res.Promise), Key: res.Key, State: abi.StatePending}, nil
	}
	r := abi.OpResult{Promise: uint32(res.Promise), Key: res.Key, State: abi.StatePending}
	switch {
	case res.Settled:
		r.State, r.Outcome = abi.StateSettled, toABI(res.Outcome)
	case res.RunBody:
		r.State = abi.StateRunBody
		if hasOpts {
			if x.bodies == nil {
				x.bodies = map[sched.PromiseID]*stepBody{}
			}
			x.bodies[res.Promise] = &stepBody{opts: opts, start: time.Now()}
		}
		if x.rs.sim != nil {
			x.simBodyStart(res.Key, res.Attempts)
		}
		if hook := x.h.cfg.onBody; hook != nil {
			x.blocking(func() { hook(x.rs.run.ID, res.Key) }) // a test holding the body is not the guest's time
		}
	case kind == abi.OpSleep:
		switch {
		case res.Pending != nil:
			x.armTimer(res.Key, res.Pending.Deadline)
		case res.New:
			if len(arg) != 8 {
				x.fail(ctx, "sleep op needs an 8-byte duration, got %d bytes", len(arg))
			}
			d := int64(binary.LittleEndian.Uint64(arg))
			if d < 0 {
				d = 0
			}
			deadline := x.s.VNow() + d // time.Sleep in workflow code moves only the virtual clock
			x.s.RecordPending(res.Promise, deadline)
			x.armTimer(res.Key, deadline)
		}
	case kind == abi.OpPromise:
		if res.New {
			x.s.RecordPending(res.Promise, 0)
		}
		x.rs.promises[res.Key] = true
	case kind == abi.OpCall:
		if res.New || res.Pending != nil {
			if err := x.h.checkGrant(ctx, x.rs.run.ModuleHash, fn); err != nil {
				x.fail(ctx, "%v (called at key %q)", err, res.Key)
			}
			if res.New {
				x.s.RecordPending(res.Promise, 0)
			}
			if x.rs.sim != nil {
				attempt := max(res.Attempts, 1)
				if res.Pending != nil {
					attempt = res.Attempts + 1
				}
				x.simActivity(res.Key, fn, bytes.Clone(arg), opts, attempt)
				break
			}
			act := x.h.activity(fn)
			if act == nil {
				x.fail(ctx, "activity %q is not registered on this host (called at key %q)", fn, res.Key)
			}
			c := activityCall{key: res.Key, name: fn, fn: act, input: bytes.Clone(arg), opts: opts, attempt: max(res.Attempts, 1)}
			if res.Pending != nil {
				c.attempt, c.resumed = res.Attempts+1, true
			}
			x.rs.startActivity(x.h.cfg.Store, c)
		}
	case kind == abi.OpChild:
		if res.New || res.Pending != nil {
			if res.New {
				x.s.RecordPending(res.Promise, 0)
			}
			x.startChild(ctx, res.Key, fn, arg)
		}
	}
	return r, nil
}

// startChild creates the child run of the op at key (once: its id is
// ChildRunID(run, key)) and drives it, unless it has ended: then its outcome is
// delivered at the next idle point.
func (x *exec) startChild(ctx context.Context, key, workflow string, input []byte) {
	rs := x.rs
	x.checkChildDepth(ctx, key, workflow)
	id := ChildRunID(rs.run.ID, key)
	rs.children[key] = id
	if len(input) == 0 {
		input = []byte("null")
	}
	child := store.Run{ID: id, ModuleHash: rs.run.ModuleHash, Workflow: workflow, Input: bytes.Clone(input), Parent: rs.run.ID}
	if rs.sim != nil {
		child.StartTime, child.Seed = rs.sim.clock, rs.run.Seed
	}
	var err error
	x.blocking(func() { child, err = x.h.createRun(ctx, child) })
	if err != nil {
		x.fail(ctx, "start child run %s: %v", id, err)
	}
	if rs.sim != nil {
		x.simChild(ctx, key, child)
		return
	}
	if child.Status.Terminal() {
		rs.mb.put(sched.Completion{Key: key, Outcome: childOutcome(child)})
		return
	}
	x.driveChild(id)
}

// driveChild has the child run id driven, unless it is being driven for
// this run already.
func (x *exec) driveChild(id string) {
	rs := x.rs
	if rs.opts.hold != nil && rs.opts.hold.byWork {
		// A worker (Work) drives the parent: the child is a run like any
		// other, claimed with a lease of its own by whichever worker is
		// free, and its end settles the parent's op.
		x.h.signal()
		return
	}
	if rs.setChildLive(id, true) {
		// Drive takes the child's lease, as it took the parent's.
		opts := DriveOptions{WaitTimers: rs.opts.WaitTimers, Owner: rs.opts.Owner, LeaseTTL: rs.opts.LeaseTTL}
		// Not ended by this execution's watchdog; ended by Host.Close.
		ctx, done, ok := x.h.childDriveContext(x.base)
		if !ok {
			rs.setChildLive(id, false)
			return
		}
		go func() {
			defer done()
			for range 3 {
				r, err := x.h.Drive(ctx, id, opts)
				if err != nil && !errors.Is(err, errActive) {
					x.h.log.Warn("child run stopped", "run", rs.run.ID, "child", id, "err", err)
				}
				// A cancellation stored just as the child suspended (too
				// late for its drive to see) is delivered by driving it again.
				if err != nil || r.Status != store.RunSuspended || !x.h.cancelWaits(ctx, id) {
					break
				}
			}
			rs.setChildLive(id, false)
			rs.mb.nudge()
		}()
	}
}

// childOutcome is the outcome a parent gets from its ended child.
func childOutcome(c store.Run) sched.Outcome {
	if c.Status == store.RunCompleted {
		v := c.Result
		if len(v) == 0 {
			v = []byte("null")
		}
		return sched.Outcome{OK: true, Value: v}
	}
	return sched.Outcome{Err: c.Error}
}

func (x *exec) stepDone(ctx context.Context, stack []uint64) {
	tid, p := sched.TaskID(api.DecodeU32(stack[0])), sched.PromiseID(api.DecodeU32(stack[1]))
	status := api.DecodeU32(stack[2])
	fatal := status == abi.StatusFatal
	if fatal {
		status = abi.StatusError
	}
	data := x.read(ctx, api.DecodeU32(stack[3]), api.DecodeU32(stack[4]))
	x.checkPayload(ctx, fmt.Sprintf("the value of step promise %d", p), len(data))
	out, ok := fromABI(status, data, false)
	if !ok {
		x.fail(ctx, "step_done with unknown status %d", api.DecodeU32(stack[2]))
	}
	if b := x.bodies[p]; b != nil {
		if t := time.Duration(b.opts.Timeout); t > 0 && time.Since(b.start) > t {
			out = sched.Outcome{Err: fmt.Sprintf("step timed out: its body ran %s, longer than its timeout of %s", time.Since(b.start).Round(time.Millisecond), t)}
		}
		if !out.OK && !fatal && retryable(b.opts, errors.New(out.Err), x.s.Attempts(p)) {
			attempt, err := x.s.StepRetry(tid, p)
			if err != nil {
				x.schedErr(ctx, err)
			}
			if sim := x.rs.sim; sim != nil {
				x.simBodyStart(x.s.BodyKey(tid), attempt)
				x.bodyWait(tid, simBackoff(b.opts, attempt-1, sim.frac(fmt.Sprintf("backoff:%s#%d", x.s.BodyKey(tid), attempt))), "backoff", false)
			} else {
				x.rs.bodyWait(tid, backoff(b.opts, attempt-1))
			}
			x.flush(ctx) // the attempt count is durable before the attempt runs
			b.start = time.Now()
			stack[0] = uint64(abi.StepRetry)
			return
		}
		delete(x.bodies, p)
	}
	if sim := x.rs.sim; sim != nil && !x.s.BodyWaited(tid) {
		// In a simulation every step body takes time: its outcome is
		// delivered like a held one, after a seeded duration.
		key := x.s.BodyKey(tid)
		id := fmt.Sprintf("step:%s#%d", key, x.s.Attempts(p))
		if err := x.s.StepDefer(tid, p); err != nil {
			x.schedErr(ctx, err)
		}
		sim.schedule(id, time.Duration(sim.frac(id)*float64(x.h.sim.cfg.StepTime)), sched.Completion{Key: key, Outcome: out})
		stack[0] = uint64(abi.StepAwait)
		return
	}
	settled, err := x.s.StepDone(tid, p, out)
	if err != nil {
		x.schedErr(ctx, err)
	}
	stack[0] = uint64(abi.StepAwait)
	if settled {
		stack[0] = uint64(abi.StepSettled)
	}
	if len(x.rs.batch.Outcomes) >= flushEvery && !x.s.Replaying() {
		var err error
		x.blocking(func() { err = x.rs.flushAsync(x.h.cfg.Store) })
		if err != nil {
			x.stop(ctx, stFailed, err)
		}
	}
}

// flushEvery bounds how many records wait in memory between idle points.
const flushEvery = 1024

func (x *exec) await(ctx context.Context, stack []uint64) {
	tid, p := sched.TaskID(api.DecodeU32(stack[0])), sched.PromiseID(api.DecodeU32(stack[1]))
	out, ok, err := x.s.Await(tid, p)
	if err != nil {
		x.schedErr(ctx, err)
	}
	x.out = abi.AppendWait(x.out[:0], abi.Wait{Ready: ok, Outcome: toABI(out)})
	stack[0] = x.reply(ctx, api.DecodeU32(stack[2]), api.DecodeU32(stack[3]), x.out)
}

func (x *exec) selectFn(ctx context.Context, stack []uint64) {
	tid := sched.TaskID(api.DecodeU32(stack[0]))
	n := api.DecodeU32(stack[2])
	if n > 1<<16 {
		x.fail(ctx, "select over %d futures (at most 65536)", n)
	}
	raw := x.read(ctx, api.DecodeU32(stack[1]), 4*n)
	ids := make([]sched.PromiseID, n)
	for i := range ids {
		ids[i] = sched.PromiseID(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	i, out, ok, err := x.s.Select(tid, ids)
	if err != nil {
		x.schedErr(ctx, err)
	}
	x.out = abi.AppendWait(x.out[:0], abi.Wait{Ready: ok, Index: uint32(i), Outcome: toABI(out)})
	stack[0] = x.reply(ctx, api.DecodeU32(stack[3]), api.DecodeU32(stack[4]), x.out)
}

func (x *exec) taskDone(ctx context.Context, stack []uint64) {
	tid := sched.TaskID(api.DecodeU32(stack[0]))
	status := api.DecodeU32(stack[1])
	data := x.read(ctx, api.DecodeU32(stack[2]), api.DecodeU32(stack[3]))
	x.checkPayload(ctx, fmt.Sprintf("the result of task %d", tid), len(data))
	out, ok := fromABI(status, data, true)
	if !ok {
		x.fail(ctx, "task_done with unknown status %d", status)
	}
	if err := x.s.TaskDone(tid, out); err != nil {
		x.schedErr(ctx, err)
	}
	if tid != sched.Root {
		x.liveTasks--
	}
	if tid == sched.Root {
		x.result = out
		x.stop(ctx, stDone, nil)
	}
}

func (x *exec) bodySleep(ctx context.Context, stack []uint64) {
	tid := sched.TaskID(api.DecodeU32(stack[0]))
	d := time.Duration(int64(stack[1]))
	if err := x.s.BodyWait(tid); err != nil {
		x.schedErr(ctx, err)
	}
	x.bodyWait(tid, d, "body", true)
}

// bodyWait starts a wait inside a step body: real, or in a simulation a
// seeded virtual duration (scaled: uniform in [0, 2d)).
func (x *exec) bodyWait(tid sched.TaskID, d time.Duration, what string, scale bool) {
	sim := x.rs.sim
	if sim == nil {
		x.rs.bodyWait(tid, d)
		return
	}
	id := x.simBodyID(tid, what)
	if scale {
		d = time.Duration(sim.frac(id) * 2 * float64(d))
	}
	x.rs.bodyWaits++
	sim.schedule(id, d, sched.Completion{Task: tid})
}

// armTimer arms a durable timer: real, or a simulation event.
func (x *exec) armTimer(key string, deadline int64) {
	sim := x.rs.sim
	if sim == nil {
		x.rs.armTimer(key, deadline)
		return
	}
	if _, ok := x.rs.timers[key]; ok {
		return
	}
	x.rs.timers[key] = deadline
	sim.at("timer:"+key, deadline, sched.Completion{Key: key, Outcome: sched.Outcome{OK: true, Value: []byte("null")}})
}

// simBodyStart notes when an attempt of a step body starts: the first
// time in any execution (kept across crashes) and in this one.
func (x *exec) simBodyStart(key string, attempt int) {
	id := fmt.Sprintf("%s#%d", key, attempt)
	sim := x.rs.sim
	if _, ok := sim.ends["start:"+id]; !ok {
		sim.ends["start:"+id] = sim.clock
	}
	if x.simStarts == nil {
		x.simStarts = map[string]int64{}
	}
	x.simStarts[id] = sim.clock
}

func (x *exec) opOptions(ctx context.Context, stack []uint64) {
	tid := sched.TaskID(api.DecodeU32(stack[0]))
	if tid == 0 || tid != x.s.Current() {
		x.fail(ctx, "op_options: task %d is not the running task", tid)
	}
	o, err := abi.DecodeOpOptions(x.read(ctx, api.DecodeU32(stack[1]), api.DecodeU32(stack[2])))
	if err != nil {
		x.fail(ctx, "op_options: bad message: %v", err)
	}
	if x.nextOpts == nil {
		x.nextOpts = map[sched.TaskID]abi.OpOptions{}
	}
	x.nextOpts[tid] = o
}

func (x *exec) canceledFn(ctx context.Context, stack []uint64) {
	ok, reason := x.s.Canceled()
	if !ok {
		stack[0] = 0
		return
	}
	if reason == "" {
		reason = "canceled"
	}
	stack[0] = x.reply(ctx, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), []byte(reason))
}

func (x *exec) inBody(ctx context.Context, what string) {
	if !x.s.CurrentInBody() {
		x.fail(ctx, "%s is only available inside a step body (StepContext); workflow code gets virtual time and seeded randomness", what)
	}
}

func (x *exec) realNow(ctx context.Context, stack []uint64) {
	x.inBody(ctx, "real time")
	if sim := x.rs.sim; sim != nil {
		// The body's virtual time, counted from the first start of this
		// attempt, so a body run again after a crash reads the same.
		tid := x.s.Current()
		id := fmt.Sprintf("%s#%d", x.s.BodyKey(tid), x.s.Attempts(x.s.BodyPromise(tid)))
		stack[0] = uint64(sim.ends["start:"+id] + sim.clock - x.simStarts[id])
		return
	}
	stack[0] = uint64(time.Now().UnixNano())
}

func (x *exec) realRand(ctx context.Context, stack []uint64) {
	x.inBody(ctx, "real randomness")
	b := x.read(ctx, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	if x.rs.sim != nil {
		x.simRand(x.s.Current()).Read(b)
		return
	}
	rand.Read(b) // writes guest memory in place
}

func (x *exec) outcomes(ctx context.Context, stack []uint64) {
	recs := x.s.Settled()
	es := make([]abi.OutcomeEntry, len(recs))
	for i, r := range recs {
		es[i] = abi.OutcomeEntry{Key: r.Key, Function: r.Function, Outcome: toABI(r.Outcome)}
	}
	x.out = abi.AppendOutcomes(x.out[:0], es)
	stack[0] = x.reply(ctx, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), x.out)
}

// dispatch returns the next task to run, running idle points as needed.
func (x *exec) dispatch(ctx context.Context) sched.Dispatch {
	if t := x.s.Current(); t != 0 {
		x.fail(ctx, "task %d called next without waiting on anything (await, select, body_sleep or task_done first)", t)
	}
	for {
		if d, ok := x.s.Next(); ok {
			return d
		}
		if x.s.Replaying() {
			if err := x.s.DeliverRound(); err != nil {
				x.schedErr(ctx, err)
			}
			continue
		}
		if x.verify {
			x.stop(ctx, stSuspended, nil) // the journal ends here
		}
		x.flush(ctx)
		if x.h.cfg.Evict == EvictAlways && x.newRecords > 0 && !x.s.InBody() && !x.s.Held() {
			x.stop(ctx, stEvicted, nil)
		}
		cs := x.rs.mb.drain()
		if len(cs) == 0 && !x.s.Held() {
			x.idleWait(ctx)
			cs = x.rs.mb.drain()
		}
		stale := x.s.DeliverLive(cs)
		x.rs.delivered(cs, stale)
		if ok, reason := x.s.Canceled(); ok && !x.canceled {
			x.canceled = true
			x.wd.cancelSeen.Store(true)
			x.rs.mb.cancelTaken()
			x.blocking(func() { x.onCancel(ctx, reason) })
		}
	}
}

// onCancel stops what the delivered cancellation failed (timers,
// promises) and cancels the child runs still pending.
func (x *exec) onCancel(ctx context.Context, reason string) {
	rs := x.rs
	for key, h := range rs.handles {
		h.Stop()
		delete(rs.handles, key)
		delete(rs.timers, key)
	}
	clear(rs.promises)
	for key, id := range rs.children {
		if rs.sim != nil {
			go func() {
				if _, err := x.h.Cancel(context.WithoutCancel(ctx), id, "parent run canceled: "+reason); err != nil && !errors.Is(err, ErrTerminal) {
					x.h.log.Warn("cancel child run", "run", rs.run.ID, "key", key, "child", id, "err", err)
				}
			}()
			continue
		}
		// Recorded before the parent goes on, and the child driven again
		// if its drive had just stopped (it suspended before the request
		// was stored): a child left suspended would never hear of it.
		_, err := x.h.Cancel(context.WithoutCancel(ctx), id, "parent run canceled: "+reason)
		switch {
		case errors.Is(err, ErrTerminal):
		case err != nil:
			x.h.log.Warn("cancel child run", "run", rs.run.ID, "key", key, "child", id, "err", err)
		default:
			x.driveChild(id)
		}
	}
}

// idleWait blocks until a completion arrives, or suspends the run when
// nothing in this process will settle soon.
func (x *exec) idleWait(ctx context.Context) {
	rs := x.rs
	if rs.sim != nil {
		if rs.mb.len() > 0 || rs.sim.fire(&rs.mb) {
			return
		}
		if len(rs.promises) > 0 || len(rs.children) > 0 {
			x.suspend(ctx, 0)
		}
		x.fail(ctx, "deadlock: every task waits and nothing can settle what they wait for")
	}
	for rs.mb.len() == 0 {
		busy := x.s.InBody() || len(rs.activities) > 0 || rs.bodyWaits > 0 || rs.liveChildren() > 0
		if !busy {
			earliest := int64(math.MaxInt64)
			for _, d := range rs.timers {
				earliest = min(earliest, d)
			}
			switch {
			case len(rs.timers) == 0 && len(rs.promises) == 0 && len(rs.children) == 0:
				x.fail(ctx, "deadlock: every task waits and nothing can settle what they wait for")
			case len(rs.timers) == 0:
				x.suspend(ctx, 0)
			case x.h.cfg.Evict != EvictNever && time.Until(time.Unix(0, earliest)) > x.h.cfg.IdleThreshold:
				x.suspend(ctx, earliest)
			}
		}
		var err error
		x.blocking(func() { err = rs.mb.waitOnce(ctx) })
		if err != nil {
			x.stop(ctx, stFailed, fmt.Errorf("interrupted while waiting: %w", err))
		}
	}
}

func (x *exec) suspend(ctx context.Context, wake int64) {
	x.rs.run.WakeAt = wake
	x.stop(ctx, stSuspended, nil)
}

// flush commits the queued records.
func (x *exec) flush(ctx context.Context) {
	var err error
	x.blocking(func() { err = x.rs.flush(ctx, x.h.cfg.Store) })
	if err != nil {
		x.stop(ctx, stFailed, err)
	}
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct {
	b    []byte
	also interface{ Write([]byte) (int, error) }
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	if t.also != nil {
		t.also.Write(p)
	}
	t.b = append(t.b, p...)
	if len(t.b) > 16<<10 {
		t.b = append(t.b[:0], t.b[len(t.b)-16<<10:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
