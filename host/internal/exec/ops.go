package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/internal/lineage"
	"github.com/skeinrun/skein/store"
)

// opArgs are the arguments of an op call.
type opArgs struct {
	tid      sched.TaskID
	kind     abi.OpKind
	name, fn string
	arg      []byte
}

// readOp reads the arguments of an op call from the guest.
func (x *Exec) readOp(stack []uint64) (opArgs, error) {
	a := opArgs{tid: sched.TaskID(u32(stack, 0)), kind: abi.OpKind(u32(stack, 1))}
	name, err := x.read(u32(stack, 2), u32(stack, 3))
	if err != nil {
		return a, err
	}
	a.name = string(name)
	if a.fn, err = x.fnName(a.kind, u32(stack, 4), u32(stack, 5)); err != nil {
		return a, err
	}
	a.arg, err = x.read(u32(stack, 6), u32(stack, 7))
	return a, err
}

// op issues an op: a task or branch (spawn, fork, branch) or a durable
// op (step, call, sleep, promise, child).
func (x *Exec) op(ctx context.Context, stack []uint64) error {
	a, err := x.readOp(stack)
	if err != nil {
		return err
	}
	if err := x.countOp(a); err != nil {
		return err
	}
	var r abi.OpResult
	switch a.kind {
	case abi.OpSpawn:
		var t sched.TaskID
		var p sched.PromiseID
		t, p, r.Key, err = x.S.Spawn(a.tid, a.name)
		r.Task, r.Promise = uint32(t), uint32(p)
		if err == nil {
			x.fx.spawned(a.tid, t)
			err = x.taskStarted()
		}
	case abi.OpFork:
		r.Promise, r.Key, err = x.S.Fork(a.tid, a.name)
	case abi.OpBranch:
		if len(a.arg) != 4 {
			return x.fail("branch op needs a 4-byte fork handle, got %d bytes", len(a.arg))
		}
		var t sched.TaskID
		var p sched.PromiseID
		t, p, r.Key, err = x.S.Branch(a.tid, binary.LittleEndian.Uint32(a.arg))
		r.Task, r.Promise = uint32(t), uint32(p)
		if err == nil {
			x.fx.spawned(a.tid, t)
			err = x.taskStarted()
		}
	case abi.OpStep, abi.OpCall, abi.OpSleep, abi.OpPromise, abi.OpChild:
		r, err = x.durableOp(ctx, a)
	case abi.OpAttrs:
		r, err = x.attrsOp(ctx, a) // attrs.go
	default:
		return x.fail("unknown op kind %d", a.kind)
	}
	var idErr *lineage.StepIDError
	switch {
	case errors.Is(err, ErrEnded):
		return err
	case errors.As(err, &idErr):
		r = abi.OpResult{State: abi.StateIDError, Scope: idErr.Scope, Name: idErr.Name, Rule: idErr.Rule, Message: idErr.Error()}
	case err != nil:
		return x.schedErr(err)
	}
	x.out = abi.AppendOpResult(x.out[:0], r)
	return x.replyTo(stack, 8, x.out)
}

// countOp counts the op against the execution's limits (limits.go).
func (x *Exec) countOp(a opArgs) error {
	if err := x.countOps(); err != nil {
		return err
	}
	if err := x.countJournal(a.kind); err != nil {
		return err
	}
	if a.kind == abi.OpChild {
		if err := x.countChild(); err != nil {
			return err
		}
	}
	if a.kind == abi.OpCall || a.kind == abi.OpChild {
		what := func() string { return fmt.Sprintf("the input of %s op %q", a.kind, a.fn) }
		if err := x.checkPayload(len(a.arg), what); err != nil {
			return err
		}
		return x.checkValue(what, a.arg)
	}
	return nil
}

// durableOp issues an op the journal records. An error that is not
// ErrEnded comes from the scheduler (op hands it to schedErr, or
// replies with a step id error).
func (x *Exec) durableOp(ctx context.Context, a opArgs) (abi.OpResult, error) {
	opts, hasOpts := x.nextOpts[a.tid]
	if hasOpts {
		delete(x.nextOpts, a.tid)
		if err := x.checkOpts(a.kind, opts); err != nil {
			return abi.OpResult{}, err
		}
		hasOpts = a.kind != abi.OpChild
	}
	switch a.kind {
	case abi.OpSleep, abi.OpPromise:
		a.fn = a.kind.String()
	}
	if a.fn == "" {
		return abi.OpResult{}, x.fail("%s op without a function name", a.kind)
	}
	res, err := x.S.Op(a.tid, a.kind.String(), a.name, a.fn)
	if err != nil {
		return abi.OpResult{}, err
	}
	x.fx.issued(res.Key, a.kind.String(), a.fn, a.tid)
	if res.New {
		x.opIssued(res.Key)
	}
	r := abi.OpResult{Promise: uint32(res.Promise), Key: res.Key, State: abi.StatePending}
	if res.New || res.Pending != nil {
		if wait, err := x.unsettled(a.kind, a.fn, res); err != nil || wait {
			return r, err
		}
	}
	switch {
	case res.Settled:
		r.State, r.Outcome = abi.StateSettled, ToABI(res.Outcome)
	case res.RunBody:
		r.State, r.Attempt = abi.StateRunBody, uint32(max(res.Attempts, 1))
		x.startBody(res, opts, hasOpts)
	case a.kind == abi.OpSleep:
		err = x.sleepOp(res, a.arg)
	case a.kind == abi.OpPromise:
		x.fx.promised(res.Key, a.arg)
		if res.New {
			if x.opSchema, err = x.promiseSchema(res.Key, a.arg); err != nil {
				return r, err
			}
			x.S.RecordPending(res.Promise, 0)
			x.opSchema = nil
		}
		x.rs.promises[res.Key] = true
	case a.kind == abi.OpCall && (res.New || res.Pending != nil):
		err = x.callOp(ctx, res, a, opts)
	case a.kind == abi.OpChild && (res.New || res.Pending != nil):
		if res.New {
			x.S.RecordPending(res.Promise, 0)
		}
		err = x.startChild(ctx, res.Key, a.fn, a.arg, opts.ParentClose)
	}
	return r, err
}

// unsettled asks the world what becomes of an op the journal does not
// settle (a verifying replay or an upgrade check starts nothing): wait
// leaves it pending; an error ends the execution (diverged, or
// suspended); neither starts it as usual.
func (x *Exec) unsettled(kind abi.OpKind, fn string, res sched.OpResult) (wait bool, err error) {
	switch act, err := x.fx.unsettled(kind, fn, res, x.S.Replaying()); {
	case err != nil:
		return false, x.schedErr(err)
	case act == opStop:
		return false, x.stop(Suspended, nil)
	case act == opWait:
		return true, nil
	}
	return false, nil
}

// checkOpts fails the run when the options of the next op do not apply
// to its kind: retries and timeouts to steps and calls, a parent close
// policy to child ops.
func (x *Exec) checkOpts(kind abi.OpKind, o abi.OpOptions) error {
	switch {
	case o.ParentClose > abi.ParentCloseAbandon:
		return x.fail("op_options: unknown parent close policy %d (1: cancel the child, 2: abandon it)", o.ParentClose)
	case o.OnExhausted > abi.OnExhaustedPause:
		return x.fail("op_options: unknown exhausted-retries policy %d (0: fail the op, 1: pause the run)", o.OnExhausted)
	case kind == abi.OpChild:
		if o.ParentClose = 0; !reflect.DeepEqual(o, abi.OpOptions{}) {
			return x.fail("retry and timeout options apply to steps and calls only, not to a child op")
		}
	case kind != abi.OpStep && kind != abi.OpCall:
		return x.fail("retry and timeout options apply to steps and calls only, not to a %s op", kind)
	case o.ParentClose != 0:
		return x.fail("a parent close policy applies to child ops only, not to a %s op", kind)
	}
	return nil
}

// startBody notes a step body that starts running in the guest.
func (x *Exec) startBody(res sched.OpResult, opts abi.OpOptions, hasOpts bool) {
	if hasOpts {
		if x.bodies == nil {
			x.bodies = map[sched.PromiseID]*stepBody{}
		}
		x.bodies[res.Promise] = &stepBody{opts: opts, start: time.Now()}
		x.bodyAttempt(res.Key, res.Attempts, time.Now().UnixNano(), 0, "")
	}
	x.fx.bodyStarted(res.Key, res.Attempts)
	if hook := x.h.Hooks().OnBody; hook != nil {
		x.blocking(func() { hook(x.rs.Run.ID, res.Key) }) // a test holding the body is not the guest's time
	}
}

// sleepOp arms the timer of a sleep: recorded pending with its deadline
// when new.
func (x *Exec) sleepOp(res sched.OpResult, arg []byte) error {
	switch {
	case res.Pending != nil:
		x.fx.armTimer(res.Key, res.Pending.Deadline)
	case res.New:
		if len(arg) != 8 {
			return x.fail("sleep op needs an 8-byte duration, got %d bytes", len(arg))
		}
		d := max(int64(binary.LittleEndian.Uint64(arg)), 0)
		// time.Sleep in workflow code moves only the virtual clock. A
		// deadline past the last instant an int64 of nanoseconds holds
		// (2262-04-11) is that instant: it would otherwise wrap around
		// into the past and fire at once.
		deadline := x.S.VNow() + min(d, math.MaxInt64-x.S.VNow())
		x.S.RecordPending(res.Promise, deadline)
		x.fx.armTimer(res.Key, deadline)
	}
	return nil
}

// callOp starts an activity call, new or resumed after a crash.
func (x *Exec) callOp(ctx context.Context, res sched.OpResult, a opArgs, opts abi.OpOptions) error {
	if err := x.h.CheckGrant(ctx, x.rs.Run.ModuleHash, a.fn); err != nil {
		return x.fail("%v (called at key %q)", err, res.Key)
	}
	if res.New {
		x.S.RecordPending(res.Promise, 0)
	}
	c := activityCall{key: res.Key, name: a.fn, input: bytes.Clone(a.arg), opts: opts, attempt: max(res.Attempts, 1)}
	if res.Pending != nil {
		c.attempt, c.resumed = res.Attempts+1, true
	}
	return x.fx.call(c)
}

// startChild creates the child run of the op at key (once: its id is
// x.h.ChildRunID(run, key)) and drives it, unless it has ended: then its
// outcome is delivered at the next idle point.
func (x *Exec) startChild(ctx context.Context, key, workflow string, input []byte, policy uint32) error {
	rs := x.rs
	if err := x.checkChildDepth(ctx, key, workflow); err != nil {
		return err
	}
	id := x.h.ChildRunID(rs.Run.ID, key)
	rs.children[key] = id
	if len(input) == 0 {
		input = []byte("null")
	}
	child := store.Run{ID: id, ModuleHash: rs.Run.ModuleHash, Workflow: workflow, Input: bytes.Clone(input), Parent: rs.Run.ID,
		ParentClose: store.ParentCloseCancel}
	if policy == abi.ParentCloseAbandon {
		child.ParentClose = store.ParentCloseAbandon
	}
	if x.tracer != nil {
		child.TraceParent = x.tracer.OpTraceparent(rs.Run, key) // the child's run span is the op's child
	}
	x.fx.prepareChild(&child)
	var err error
	x.blocking(func() { child, err = x.h.CreateRun(ctx, child) })
	if err != nil {
		return x.fail("start child run %s: %v", id, err)
	}
	// The policy is the one stored with the child when it was created.
	rs.abandons[key] = child.ParentClose == store.ParentCloseAbandon
	x.h.NoteChildKey(rs.Run.ID, id, key)
	x.fx.child(ctx, key, child)
	return nil
}

// driveChild has the child run id driven, unless it is being driven for
// this run already.
func (x *Exec) driveChild(id string) { x.h.DriveChild(x.base, x.rs, id) }

// childOutcome is the outcome a parent gets from its ended child.
func ChildOutcome(c store.Run) sched.Outcome {
	if c.Status == store.RunCompleted {
		v := c.Result
		if len(v) == 0 {
			v = []byte("null")
		}
		return sched.Outcome{OK: true, Value: v}
	}
	return sched.Outcome{Err: c.Error}
}
