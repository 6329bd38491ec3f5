package exec

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/sched"
)

// The host functions of the ABI (abi/README.md): each reads its
// arguments from the guest, asks the scheduler, and writes its reply.
// A host function that ends the execution returns x.stop's error.
// This file holds the table and the functions that only read or report;
// ops.go issues ops, steps.go ends steps and tasks, idle.go runs the
// scheduler's idle points.

// hostFn is the Go side of one ABI host function.
type hostFn struct {
	sig  engine.FuncType
	call func(x *Exec, ctx context.Context, stack []uint64) error
}

const (
	i32 = engine.I32
	i64 = engine.I64
)

func sig(params, results []engine.ValueType) engine.FuncType {
	return engine.FuncType{Params: params, Results: results}
}

// hostFns are the ABI v1 host functions by name, with their signatures.
var hostFns = map[string]hostFn{
	abi.FnHello:       {sig([]engine.ValueType{i32}, []engine.ValueType{i32}), (*Exec).hello},
	abi.FnWorkflows:   {sig([]engine.ValueType{i32, i32}, nil), (*Exec).announce},
	abi.FnInvocation:  {sig([]engine.ValueType{i32, i32}, []engine.ValueType{i32}), (*Exec).invocation},
	abi.FnTake:        {sig([]engine.ValueType{i32, i32}, []engine.ValueType{i32}), (*Exec).take},
	abi.FnNext:        {sig([]engine.ValueType{i32, i32}, []engine.ValueType{i32}), (*Exec).next},
	abi.FnOp:          {sig([]engine.ValueType{i32, i32, i32, i32, i32, i32, i32, i32, i32, i32}, []engine.ValueType{i32}), (*Exec).op},
	abi.FnStepDone:    {sig([]engine.ValueType{i32, i32, i32, i32, i32}, []engine.ValueType{i32}), (*Exec).stepDone},
	abi.FnAwait:       {sig([]engine.ValueType{i32, i32, i32, i32}, []engine.ValueType{i32}), (*Exec).await},
	abi.FnSelect:      {sig([]engine.ValueType{i32, i32, i32, i32, i32}, []engine.ValueType{i32}), (*Exec).selectFn},
	abi.FnTaskDone:    {sig([]engine.ValueType{i32, i32, i32, i32}, nil), (*Exec).taskDone},
	abi.FnBodySleep:   {sig([]engine.ValueType{i32, i64}, nil), (*Exec).bodySleep},
	abi.FnRealNow:     {sig(nil, []engine.ValueType{i64}), (*Exec).realNow},
	abi.FnRealRand:    {sig([]engine.ValueType{i32, i32}, nil), (*Exec).realRand},
	abi.FnOutcomes:    {sig([]engine.ValueType{i32, i32}, []engine.ValueType{i32}), (*Exec).outcomes},
	abi.FnOpOptions:   {sig([]engine.ValueType{i32, i32, i32}, nil), (*Exec).opOptions},
	abi.FnCanceled:    {sig([]engine.ValueType{i32, i32}, []engine.ValueType{i32}), (*Exec).canceledFn},
	abi.FnInputSchema: {sig([]engine.ValueType{i32, i32, i32, i32}, []engine.ValueType{i32}), (*Exec).inputSchema},
	abi.FnContinue:    {sig([]engine.ValueType{i32, i32, i32}, nil), (*Exec).continueAsNew},
	abi.FnFeed:        {sig([]engine.ValueType{i32, i32, i32, i32}, []engine.ValueType{i32}), (*Exec).feed},
}

// engineHostFuncs returns the host functions as the engine calls them:
// each finds its execution in the context (instantiate puts it there).
func HostFuncs() []engine.HostFunc {
	fns := make([]engine.HostFunc, 0, len(hostFns))
	for name, f := range hostFns {
		progress := progressFns[name]
		fns = append(fns, engine.HostFunc{Name: name, Type: f.sig, Call: func(ctx context.Context, mem engine.Memory, stack []uint64) error {
			x, _ := ctx.Value(execKey{}).(*Exec)
			if x == nil {
				return fmt.Errorf("skein host function %s called outside a skein execution", name)
			}
			return hostCall(ctx, x, mem, name, progress, f.call, stack)
		}})
	}
	return fns
}

// u32 is argument i of a host function call.
func u32(stack []uint64, i int) uint32 { return uint32(stack[i]) }

// read returns n bytes of guest memory at ptr (aliased: valid until the
// guest runs again).
func (x *Exec) read(ptr, n uint32) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	b, ok := x.mem.Read(ptr, n)
	if !ok {
		return nil, x.fail("guest passed an out-of-bounds buffer (offset %d, length %d)", ptr, n)
	}
	return b, nil
}

// fnName reads the function name of an op of kind, interned to avoid an
// allocation per op. A name that is not valid text fails the execution
// before the op is issued (texts.go); only valid names are interned.
func (x *Exec) fnName(kind abi.OpKind, ptr, n uint32) (string, error) {
	b, err := x.read(ptr, n)
	if err != nil {
		return "", err
	}
	if s, ok := x.fnNames[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if err := CheckNameText(kind.String()+" op: the function name", s); err != nil {
		return "", x.fail("%v", err)
	}
	x.fnNames[s] = s
	return s, nil
}

// reply hands a message to the guest: into its buffer if it fits, else
// kept for take. It returns the message's length, the call's result.
func (x *Exec) reply(buf, capacity uint32, msg []byte) (uint64, error) {
	if uint32(len(msg)) <= capacity {
		if !x.mem.Write(buf, msg) {
			return 0, x.fail("guest passed an out-of-bounds buffer (offset %d, capacity %d)", buf, capacity)
		}
		x.pending = nil
	} else {
		x.pending = append(x.pending[:0], msg...)
	}
	return uint64(len(msg)), nil
}

// replyTo replies with msg into the buffer of arguments i and i+1 and
// sets the call's result.
func (x *Exec) replyTo(stack []uint64, i int, msg []byte) error {
	n, err := x.reply(u32(stack, i), u32(stack, i+1), msg)
	stack[0] = n
	return err
}

func (x *Exec) hello(ctx context.Context, stack []uint64) error {
	x.h.Activated(x.rs) // the first host call of an execution
	v := u32(stack, 0)
	stack[0] = uint64(abi.Version)
	if v != abi.Version {
		return x.fail("the module speaks skein ABI v%d; this host speaks ABI v%d", v, abi.Version)
	}
	return nil
}

func (x *Exec) announce(ctx context.Context, stack []uint64) error {
	b, err := x.read(u32(stack, 0), u32(stack, 1))
	if err != nil {
		return err
	}
	x.Workflows = nil
	if len(b) > 0 {
		x.Workflows = strings.Split(string(b), "\n")
	}
	for _, w := range x.Workflows {
		if err := CheckNameText("workflows: the workflow name", w); err != nil {
			return x.fail("%v", err)
		}
	}
	return nil
}

func (x *Exec) invocation(ctx context.Context, stack []uint64) error {
	if x.describe {
		x.Described = true
		return x.stop(stDescribed, nil)
	}
	run := x.rs.Run
	found := false
	for _, w := range x.Workflows {
		found = found || w == run.Workflow
	}
	if !found {
		return x.fail("unknown workflow %q; the module registers: %s", run.Workflow, strings.Join(x.Workflows, ", "))
	}
	x.out = abi.AppendInvocation(x.out[:0], abi.Invocation{Mode: abi.ModeRun, Workflow: run.Workflow, Input: run.Input})
	return x.replyTo(stack, 0, x.out)
}

func (x *Exec) take(ctx context.Context, stack []uint64) error {
	buf, n := u32(stack, 0), u32(stack, 1)
	if x.pending == nil || uint32(len(x.pending)) != n {
		return x.fail("guest called take(%d bytes) with no message of that size pending", n)
	}
	if !x.mem.Write(buf, x.pending) {
		return x.fail("guest passed an out-of-bounds buffer to take (offset %d, length %d)", buf, n)
	}
	x.pending = nil
	stack[0] = uint64(n)
	return nil
}

func (x *Exec) next(ctx context.Context, stack []uint64) error {
	d, err := x.dispatch(ctx)
	if err != nil {
		return err
	}
	r := abi.Resume{Task: uint32(d.Task)}
	if d.Start {
		r.Kind = abi.ResumeStart
	} else {
		r.Kind = abi.ResumeWake
		r.Promise = uint32(d.Promise)
		r.Outcome = ToABI(d.Outcome)
		if d.Promise != 0 {
			n := max(x.selecting[d.Task], 1)
			delete(x.selecting, d.Task)
			x.fx.observed(d.Task, d.Promise, n)
		}
	}
	x.out = abi.AppendResume(x.out[:0], r)
	return x.replyTo(stack, 0, x.out)
}

func (x *Exec) await(ctx context.Context, stack []uint64) error {
	tid, p := sched.TaskID(u32(stack, 0)), sched.PromiseID(u32(stack, 1))
	out, ok, err := x.S.Await(tid, p)
	if err != nil {
		return x.schedErr(err)
	}
	if ok {
		x.fx.observed(tid, p, 1)
	}
	x.out = abi.AppendWait(x.out[:0], abi.Wait{Ready: ok, Outcome: ToABI(out)})
	return x.replyTo(stack, 2, x.out)
}

func (x *Exec) selectFn(ctx context.Context, stack []uint64) error {
	tid := sched.TaskID(u32(stack, 0))
	n := u32(stack, 2)
	if n > 1<<16 {
		return x.fail("select over %d futures (at most 65536)", n)
	}
	raw, err := x.read(u32(stack, 1), 4*n)
	if err != nil {
		return err
	}
	ids := make([]sched.PromiseID, n)
	for i := range ids {
		ids[i] = sched.PromiseID(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	i, out, ok, err := x.S.Select(tid, ids)
	if err != nil {
		return x.schedErr(err)
	}
	switch {
	case ok:
		x.fx.observed(tid, ids[i], len(ids))
	case len(ids) > 1:
		if x.selecting == nil {
			x.selecting = map[sched.TaskID]int{}
		}
		x.selecting[tid] = len(ids) // the choice is made when a promise wakes the task (next)
	}
	x.out = abi.AppendWait(x.out[:0], abi.Wait{Ready: ok, Index: uint32(i), Outcome: ToABI(out)})
	return x.replyTo(stack, 3, x.out)
}

func (x *Exec) outcomes(ctx context.Context, stack []uint64) error {
	recs := x.S.Settled()
	es := make([]abi.OutcomeEntry, len(recs))
	for i, r := range recs {
		es[i] = abi.OutcomeEntry{Key: r.Key, Function: r.Function, Outcome: ToABI(r.Outcome)}
	}
	x.out = abi.AppendOutcomes(x.out[:0], es)
	return x.replyTo(stack, 0, x.out)
}

func (x *Exec) opOptions(ctx context.Context, stack []uint64) error {
	tid := sched.TaskID(u32(stack, 0))
	if tid == 0 || tid != x.S.Current() {
		return x.fail("op_options: task %d is not the running task", tid)
	}
	b, err := x.read(u32(stack, 1), u32(stack, 2))
	if err != nil {
		return err
	}
	o, err := abi.DecodeOpOptions(b)
	if err != nil {
		return x.fail("op_options: bad message: %v", err)
	}
	if x.nextOpts == nil {
		x.nextOpts = map[sched.TaskID]abi.OpOptions{}
	}
	x.nextOpts[tid] = o
	return nil
}

func (x *Exec) canceledFn(ctx context.Context, stack []uint64) error {
	ok, reason := x.S.Canceled()
	if !ok {
		stack[0] = 0
		return nil
	}
	if reason == "" {
		reason = "canceled"
	}
	return x.replyTo(stack, 0, []byte(reason))
}

// inBody fails the execution unless the running task is in a step body.
func (x *Exec) inBody(what string) error {
	if !x.S.CurrentInBody() {
		return x.fail("%s is only available inside a step body (StepContext); workflow code gets virtual time and seeded randomness", what)
	}
	return nil
}

func (x *Exec) realNow(ctx context.Context, stack []uint64) error {
	if err := x.inBody("real time"); err != nil {
		return err
	}
	stack[0] = uint64(x.fx.bodyNow())
	return nil
}

func (x *Exec) realRand(ctx context.Context, stack []uint64) error {
	if err := x.inBody("real randomness"); err != nil {
		return err
	}
	b, err := x.read(u32(stack, 0), u32(stack, 1))
	if err != nil {
		return err
	}
	x.fx.bodyRand(b) // writes guest memory in place
	return nil
}
