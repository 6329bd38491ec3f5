package skein

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/internal/lineage"
)

// Option configures one op.
type Option func(*opOptions)

type opOptions struct {
	name        string
	named       bool // ID was given, even with ""
	retry       *RetryPolicy
	timeout     time.Duration
	parentClose ParentClosePolicy
}

// ID names an op: the name becomes the op's key segment instead of its
// position (it still consumes a position), so the op keeps its identity
// when unnamed ops are added or removed around it. A name must be
// non-empty, without dots or whitespace, not all digits, not "t" and
// digits (the form of a spawned task's scope), and short enough that the
// full key fits in 300 characters; a name that breaks a rule fails the op
// with a *StepIDError before anything runs (abi/README.md §8).
func ID(name string) Option { return func(o *opOptions) { o.name, o.named = name, true } }

// RetryPolicy says how a failed Step or Call is retried. Attempts are
// durable: a restart continues the count, and the outcome table shows it.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts, the first included (default 3).
	MaxAttempts int
	// InitialBackoff is the wait before the second attempt (default 100ms).
	InitialBackoff time.Duration
	// MaxBackoff caps the wait between attempts (default 1 minute).
	MaxBackoff time.Duration
	// Multiplier grows the wait after each attempt (default 2).
	Multiplier float64
	// Jitter spreads each wait randomly by ± this fraction (default 0.2;
	// negative for none).
	Jitter float64
	// NonRetryable lists error texts (substrings) that end the retries at
	// once. An error wrapped with NonRetryable is never retried either.
	NonRetryable []string
	// OnExhausted is what happens when the attempts run out: Fail (the
	// default) fails the op with the last error; Pause keeps the op
	// pending and pauses the run, for an operator to fix the cause (a
	// worker, the code) and unpause it or resume it on new code; the op
	// then gets MaxAttempts attempts again.
	OnExhausted Exhausted
}

// Exhausted is what a Step or Call does when its retries run out
// (RetryPolicy.OnExhausted).
type Exhausted uint32

// The OnExhausted policies.
const (
	// Fail fails the op with its last attempt's error.
	Fail Exhausted = Exhausted(abi.OnExhaustedFail)
	// Pause pauses the run (docs/operations.md, "Pausing runs"), with
	// the op pending and a reason naming its key and last error.
	Pause Exhausted = Exhausted(abi.OnExhaustedPause)
)

// Retry retries a failed Step or Call by policy, with exponential backoff.
func Retry(policy RetryPolicy) Option {
	return func(o *opOptions) { p := policy; o.retry = &p }
}

// Timeout bounds each attempt of a Step or Call: an activity's context is
// canceled at the deadline and the attempt fails; a step body that returns
// after the deadline fails the attempt with a timeout error (its result is
// dropped). A timed-out attempt is retried like any other failure.
func Timeout(d time.Duration) Option { return func(o *opOptions) { o.timeout = d } }

// ParentClosePolicy says what the end of a run does to a child run
// (Child) that has not ended then.
type ParentClosePolicy uint32

const (
	// CancelChild, the default, requests the child's cancellation when
	// its parent ends first (completed, failed, canceled or continued):
	// its pending sleeps, promises and children fail with a cancellation
	// error, and it ends canceled.
	CancelChild ParentClosePolicy = ParentClosePolicy(abi.ParentCloseCancel)
	// AbandonChild leaves the child running when its parent ends first:
	// it is marked abandoned and completes on its own, and its end
	// settles nothing anyone waits for.
	AbandonChild ParentClosePolicy = ParentClosePolicy(abi.ParentCloseAbandon)
)

// ParentClose sets a Child's policy for the end of its parent (default
// CancelChild). The policy is stored with the child run when it is
// created, so every replay and every worker applies the same.
func ParentClose(p ParentClosePolicy) Option { return func(o *opOptions) { o.parentClose = p } }

// NonRetryableError marks an error that a retry policy must not retry:
// a step body that returns one ends the step's retries. It is package
// activity's, the one the host and the worker package recognise.
type NonRetryableError = activity.NonRetryableError

// NonRetryable wraps err so that no retry policy retries it
// (activity.NonRetryable).
func NonRetryable(err error) error { return activity.NonRetryable(err) }

// nonRetryable reports whether err is or wraps a *NonRetryableError.
func nonRetryable(err error) bool {
	var nr *NonRetryableError
	return errors.As(err, &nr)
}

// encode returns the op_options message of o, nil when it has none.
func (o *opOptions) encode() []byte {
	if o.retry == nil && o.timeout <= 0 && o.parentClose == 0 {
		return nil
	}
	// A parent close policy is sent too, for the host to refuse it on an
	// op that is not a child.
	m := abi.OpOptions{Timeout: uint64(max(o.timeout, 0)), ParentClose: uint32(o.parentClose)}
	if r := o.retry; r != nil {
		m.MaxAttempts = uint32(r.MaxAttempts)
		if r.MaxAttempts <= 0 {
			m.MaxAttempts = 3
		}
		m.InitialBackoff = uint64(orDefault(r.InitialBackoff, 100*time.Millisecond))
		m.MaxBackoff = uint64(orDefault(r.MaxBackoff, time.Minute))
		mult := r.Multiplier
		if mult <= 0 {
			mult = 2
		}
		m.Multiplier = uint32(mult * 1000)
		jitter := r.Jitter
		switch {
		case jitter == 0:
			jitter = 0.2
		case jitter < 0:
			jitter = 0
		}
		m.Jitter = uint32(min(jitter, 1) * 1000)
		m.NonRetryable = r.NonRetryable
		m.OnExhausted = uint32(r.OnExhausted)
	}
	return abi.AppendOpOptions(nil, m)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func collect(opts []Option) opOptions {
	if len(opts) == 0 {
		return opOptions{} // the common case, without the heap value below
	}
	return collectAll(opts)
}

func collectAll(opts []Option) opOptions {
	var o opOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// op issues a durable op to the host.
func (c *Context) op(kind abi.OpKind, o opOptions, fn string, arg []byte) abi.OpResult {
	return c.opWith(kind, nil, o, fn, arg)
}

// opWith issues a durable op, with its retry and timeout options (nil:
// none) sent first. An explicit empty name is an id error raised here,
// without a host call: the ABI sends "no name" as "".
func (c *Context) opWith(kind abi.OpKind, opts []byte, o opOptions, fn string, arg []byte) abi.OpResult {
	c.check()
	if o.named && o.name == "" {
		e := &lineage.StepIDError{Scope: c.t.scope, Rule: lineage.RuleEmpty}
		return abi.OpResult{State: abi.StateIDError, Scope: e.Scope, Rule: e.Rule, Message: e.Error()}
	}
	if len(opts) == 0 && !o.named {
		if r, ok := takeFed(c.t, kind, fn); ok {
			return r // r.Outcome.Data is in feedBuf: decode it before the next feed
		}
	}
	flushFeed()
	name := o.name
	if len(opts) > 0 {
		hostOpOptions(c.t.id, ptr(opts), uint32(len(opts)))
	}
	n := hostOp(c.t.id, uint32(kind), strPtr(name), uint32(len(name)), strPtr(fn), uint32(len(fn)),
		ptr(arg), uint32(len(arg)), ptr(scratch), uint32(len(scratch)))
	decodeResult := abi.DecodeOpResult
	if kind == abi.OpStep {
		decodeResult = abi.DecodeOpResultKeyless // Step does not read the key
	}
	r, err := decodeResult(message(n))
	if err != nil {
		panic("skein: bad op message: " + err.Error())
	}
	settledOp(c.t, kind, r.State)
	return r // r.Outcome.Data is in scratch: decode it before the next host call
}

func idError(r abi.OpResult) error {
	return &StepIDError{Scope: r.Scope, Name: r.Name, Rule: r.Rule, Msg: r.Message}
}

// StepContext is what a step body gets: real time and randomness, and a
// real-time wait during which other tasks run. Values obtained here are
// recorded only through the step's return value.
type StepContext struct {
	t       *task
	rng     *rand.Rand
	attempt int
}

// Attempt returns the durable number of the attempt that is running: 1
// for the first, 2 for the first retry under skein.Retry, and so on. The
// host records each attempt before it runs, so the number is the same
// live and after a crash, where an attempt that was cut short counts as
// used: a body that must act differently on a retry (fail until the third
// attempt, pick a backup endpoint) reads it here, never from a counter in
// workflow or package state, which a replay starts again. It is 0 only
// under a host too old to tell it (abi/README.md, OpResult).
func (s *StepContext) Attempt() int { return s.attempt }

// Now returns the real wall-clock time.
func (s *StepContext) Now() time.Time { return time.Unix(0, hostRealNow()) }

// Rand returns a generator seeded from real randomness.
func (s *StepContext) Rand() *rand.Rand {
	if s.rng == nil {
		var seed [32]byte
		hostRealRand(unsafe.Pointer(&seed[0]), 32)
		s.rng = rand.New(rand.NewChaCha8(seed))
	}
	return s.rng
}

// Sleep waits d of real time. Other tasks run meanwhile.
func (s *StepContext) Sleep(d time.Duration) {
	if current != s.t {
		misuse()
	}
	hostBodySleep(s.t.id, int64(d))
	s.t.yield()
}

// Step runs body once and records its result under the step's key; on
// replay the recorded result is returned and body does not run. fnName
// identifies the code: replay fails with a code mismatch if the recorded
// function at this key differs.
func Step[T any](ctx *Context, fnName string, body func(*StepContext) (T, error), opts ...Option) (T, error) {
	o := collect(opts)
	r := ctx.opWith(abi.OpStep, o.encode(), o, fnName, nil)
	switch r.State {
	case abi.StateIDError:
		var zero T
		return zero, idError(r)
	case abi.StateSettled:
		return decode[T](r.Outcome)
	case abi.StatePending:
		return decode[T](ctx.t.await(r.Promise))
	}
	attempt := int(r.Attempt)
	for {
		v, err := body(&StepContext{t: ctx.t, attempt: attempt})
		if current != ctx.t {
			misuse()
		}
		status, data := encodeResult(v, err)
		if err != nil && nonRetryable(err) {
			status = abi.StatusFatal
		}
		switch hostStepDone(ctx.t.id, r.Promise, status, ptr(data), uint32(len(data))) {
		case abi.StepSettled:
			if status == abi.StatusFatal {
				status = abi.StatusError
			}
			return decode[T](abi.Outcome{Status: status, Data: data})
		case abi.StepRetry:
			// The host recorded the next attempt (one more) before
			// answering; the backoff, then that attempt.
			ctx.t.yield()
			if attempt > 0 { // 0: a host that does not tell
				attempt++
			}
			continue
		}
		return decode[T](ctx.t.await(r.Promise))
	}
}

// Awaitable is anything Select can wait for: every Future.
type Awaitable interface {
	handle() (uint32, error)
}

// Future is the pending result of an op.
type Future[T any] struct {
	p   uint32
	key string
	err error // set when the op could not be issued
}

func (f Future[T]) handle() (uint32, error) { return f.p, f.err }

// Key returns the op's lineage key (for a Promise, the part after the run
// id in the id that settles it).
func (f Future[T]) Key() string { return f.key }

// Get waits until the future settles and returns its value or error.
func (f Future[T]) Get(ctx *Context) (T, error) {
	ctx.check()
	if f.err != nil {
		var zero T
		return zero, f.err
	}
	return decode[T](ctx.t.await(f.p))
}

func future[T any](r abi.OpResult) Future[T] {
	if r.State == abi.StateIDError {
		return Future[T]{err: idError(r)}
	}
	return Future[T]{p: r.Promise, key: r.Key}
}

// Go starts fn as a new task. Its ops are keyed under the task's scope
// (t{p}, or the ID name), so concurrent chains never swap ids.
func Go[T any](ctx *Context, fn func(*Context) (T, error), opts ...Option) Future[T] {
	o := collect(opts)
	r := ctx.op(abi.OpSpawn, o, "", nil)
	f := future[T](r)
	if f.err == nil {
		spawn(r.Task, r.Key, func(c *Context) (uint32, []byte) { return encodeResult(fn(c)) })
	}
	return f
}

func spawn(id uint32, scope string, body func(*Context) (uint32, []byte)) {
	tasks[id] = &task{id: id, scope: scope, resume: make(chan abi.Resume, 1), body: body}
}

// Group is a parallel fork: each Go call starts one branch task.
type Group struct {
	ctx  *Context
	fork uint32
	err  error
	futs []Future[struct{}]
}

// Parallel opens a parallel fork. The fork takes one position; branch i
// (the i-th call of g.Go) gets the scope {p}.{i}, or {name}.{i} with ID.
func Parallel(ctx *Context, opts ...Option) *Group {
	o := collect(opts)
	r := ctx.op(abi.OpFork, o, "", nil)
	g := &Group{ctx: ctx, fork: r.Promise}
	if r.State == abi.StateIDError {
		g.err = idError(r)
	}
	return g
}

// Go starts the next branch of the fork.
func (g *Group) Go(fn func(*Context) error) {
	if g.err != nil {
		return
	}
	var arg [4]byte
	binary.LittleEndian.PutUint32(arg[:], g.fork)
	r := g.ctx.op(abi.OpBranch, opOptions{}, "", arg[:])
	f := future[struct{}](r)
	if f.err == nil {
		spawn(r.Task, r.Key, func(c *Context) (uint32, []byte) { return encodeResult(struct{}{}, fn(c)) })
	}
	g.futs = append(g.futs, f)
}

// Wait waits for every branch and returns the first error in branch order.
func (g *Group) Wait(ctx *Context) error {
	ctx.check()
	if g.err != nil {
		return g.err
	}
	var first error
	for _, f := range g.futs {
		if _, err := f.Get(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Sleep starts a durable timer of d in virtual time. A run whose tasks all
// wait on long timers is suspended and resumed by replay when one is due.
func Sleep(ctx *Context, d time.Duration, opts ...Option) Future[struct{}] {
	o := collect(opts)
	var arg [8]byte
	binary.LittleEndian.PutUint64(arg[:], uint64(d))
	return future[struct{}](ctx.op(abi.OpSleep, o, "sleep", arg[:]))
}

// Promise creates a durable promise that something outside the workflow
// settles by its full id "{run}.{key}". The shape of T (a JSON Schema,
// see package shape) is recorded with the promise: the host refuses a
// settlement whose value does not have it, and the promise stays pending.
func Promise[T any](ctx *Context, opts ...Option) Future[T] {
	o := collect(opts)
	return future[T](ctx.op(abi.OpPromise, o, "promise", schemaFor[T]()))
}

// Call runs the host activity with input (JSON) on the host and records
// its outcome.
func Call[T any](ctx *Context, activity string, input any, opts ...Option) Future[T] {
	o := collect(opts)
	arg, err := json.Marshal(input)
	if err != nil {
		return Future[T]{err: err}
	}
	return future[T](ctx.opWith(abi.OpCall, o.encode(), o, activity, arg))
}

// Child starts the workflow as a child run with id "{run}.{key}". If the
// run ends before the child, the child is canceled, or with
// ParentClose(AbandonChild) left to complete on its own.
func Child[T any](ctx *Context, workflow string, input any, opts ...Option) Future[T] {
	o := collect(opts)
	arg, err := json.Marshal(input)
	if err != nil {
		return Future[T]{err: err}
	}
	var copts []byte // only a parent close policy applies to a child op
	if o.parentClose != 0 {
		copts = abi.AppendOpOptions(nil, abi.OpOptions{ParentClose: uint32(o.parentClose)})
	}
	return future[T](ctx.opWith(abi.OpChild, copts, o, workflow, arg))
}

// Select waits until one of the futures settles and returns its index. If
// several are settled, it returns the one that settled first in journal
// order, so a replay picks the same one.
func Select(ctx *Context, futures ...Awaitable) (int, error) {
	ctx.check()
	hs := make([]byte, 0, 4*len(futures))
	ids := make([]uint32, len(futures))
	for i, f := range futures {
		h, err := f.handle()
		if err != nil {
			return i, err
		}
		ids[i] = h
		hs = binary.LittleEndian.AppendUint32(hs, h)
	}
	flushFeed()
	w, err := abi.DecodeWait(message(hostSelect(ctx.t.id, ptr(hs), uint32(len(futures)), ptr(scratch), uint32(len(scratch)))))
	if err != nil {
		panic("skein: bad select message: " + err.Error())
	}
	if w.Ready {
		return int(w.Index), nil
	}
	r := ctx.t.yield()
	for i, h := range ids {
		if h == r.Promise {
			return i, nil
		}
	}
	panic("skein: select woken by a promise it did not wait for")
}

// Now returns the run's virtual time: deterministic, advanced by the host
// only at recorded points. time.Now in workflow code returns the same.
func Now(ctx *Context) time.Time {
	ctx.check()
	return time.Now()
}

// Outcome is a recorded durable outcome.
type Outcome struct {
	Function string
	Value    json.RawMessage // when Err is empty
	Err      string
}

// Outcomes returns the outcomes settled so far in this run, by key.
func Outcomes(ctx *Context) map[string]Outcome {
	ctx.check()
	flushFeed()
	es, err := abi.DecodeOutcomes(message(hostOutcomes(bufArgs())))
	if err != nil {
		panic("skein: bad outcomes message: " + err.Error())
	}
	m := make(map[string]Outcome, len(es))
	for _, e := range es {
		o := Outcome{Function: e.Function}
		if e.Outcome.Status == abi.StatusOK {
			o.Value = append(json.RawMessage(nil), e.Outcome.Data...)
		} else {
			o.Err = string(e.Outcome.Data)
		}
		m[e.Key] = o
	}
	return m
}

// ErrCanceled is what errors.Is finds in every error caused by the run's
// cancellation: a pending Sleep or Promise, a Child, or a Sleep or
// Promise issued after the cancellation.
var ErrCanceled = errors.New("skein: canceled")

// CanceledError is the error of an op failed by the run's cancellation.
type CanceledError struct{ Reason string }

func (e *CanceledError) Error() string { return canceledPrefix + e.Reason }

// Is reports whether target is ErrCanceled.
func (e *CanceledError) Is(target error) bool { return target == ErrCanceled }

// canceledPrefix starts the error text of outcomes failed by a
// cancellation (sched.CanceledPrefix on the host).
const canceledPrefix = "skein: canceled: "

// Err returns nil while the run goes on, and a *CanceledError (errors.Is
// ErrCanceled) once its cancellation has been delivered: from then on
// pending and new sleeps and promises fail at once, while steps and
// activity calls still run, so the workflow can compensate. Like every
// outcome, the moment a run sees its cancellation is recorded and
// replayed exactly.
func (c *Context) Err() error {
	c.check()
	n := hostCanceled(ptr(scratch), uint32(len(scratch)))
	if n == 0 {
		return nil
	}
	return &CanceledError{Reason: string(message(n))}
}
