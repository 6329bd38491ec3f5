// Package skein is the guest SDK for skein workflows: the package a
// workflow module imports. A module is a Go main package built with
// GOOS=wasip1 GOARCH=wasm whose main function registers workflows and
// calls Main:
//
//	func main() {
//		skein.Register("greet", greet)
//		skein.Main()
//	}
//
// Workflow code runs inside the skein host's deterministic sandbox: time,
// randomness and the order in which tasks run are decided by the host, and
// every durable operation (Step, Call, Sleep, Promise, Child) gets an id
// from task lineage (see docs/design.md). A run can be dropped at any point and
// replayed from the top; recorded outcomes are returned instead of running
// the operation again.
//
// Rules for workflow code: start concurrent work only with Go or Parallel
// (never a raw go statement that uses a Context); use real time and
// randomness only inside step bodies (StepContext); a step body must not
// touch workflow state — only its return value flows back.
package skein

// The native build's host stubs (imports_other.go) panic, so there
// staticcheck takes what follows a host call for dead code.
//lint:file-ignore SA4009 wrong for the native build only (runTasks' wake)

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"unsafe"

	"github.com/skeinrun/skein/abi"
)

// Context is a task's handle on the workflow. Each task (the root, a task
// started with Go, a Parallel branch) has its own Context, which only that
// task may use.
type Context struct {
	t *task
}

type task struct {
	id      uint32
	scope   string // the key of the task's id scope ("" for the root)
	resume  chan abi.Resume
	body    func(*Context) (uint32, []byte)
	settled int // ops in a row that op answered with a recorded outcome (feed.go)
}

var (
	registry = map[string]func(*Context, []byte) (uint32, []byte){}
	inputs   = map[string]func() []byte{} // each workflow's input schema (shape.Of)
	tasks    = map[uint32]*task{}
	current  *task
	idle     []chan *task // goroutines whose task finished, waiting for one to start (task.run)
	scratch  = make([]byte, 64<<10)
)

// Register makes fn runnable as the workflow name. Input and output are
// JSON-encoded. Call Register from main before Main. The shape of In (a
// JSON Schema, see package shape) is announced at deploy: the host
// refuses to start a run whose input does not have it.
func Register[In, Out any](name string, fn func(*Context, In) (Out, error)) {
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("skein: workflow %q registered twice", name))
	}
	if name == "" || strings.ContainsAny(name, "\n") {
		panic(fmt.Sprintf("skein: workflow name %q must be non-empty and on one line", name))
	}
	inputs[name] = schemaFor[In]
	warmers[name] = func() {
		var in In
		var out Out
		_, _ = json.Marshal(in) // fills encoding/json's caches of the types (prepare.go)
		_, _ = json.Marshal(out)
	}
	registry[name] = func(ctx *Context, input []byte) (uint32, []byte) {
		var in In
		if len(input) > 0 {
			if err := json.Unmarshal(input, &in); err != nil {
				return abi.StatusError, []byte(fmt.Sprintf("workflow %q: input does not decode into %T: %v", name, in, err))
			}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return abi.StatusError, []byte(err.Error())
		}
		b, err := json.Marshal(out)
		if err != nil {
			return abi.StatusError, []byte(fmt.Sprintf("workflow %q: result does not encode as JSON: %v", name, err))
		}
		return abi.StatusOK, b
	}
}

// Main runs the invocation the host asks for. It is the only thing a
// workflow module's main function calls after Register, and it does not
// return while the run is live. In a module built as a reactor
// (-buildmode=c-shared) it also returns once, when the host prepares the
// module (prepare.go): main must do nothing after it.
func Main() {
	if preparing {
		prepare()
		return
	}
	serve()
}

// workflowNames returns the registered workflows' names, sorted.
func workflowNames() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// serve announces the workflows and runs the invocation.
func serve() {
	if v := hostHello(abi.Version); v != abi.Version {
		fmt.Fprintf(os.Stderr, "skein: host speaks ABI v%d, this module ABI v%d\n", v, abi.Version)
		os.Exit(3)
	}
	names := workflowNames()
	list := strings.Join(names, "\n")
	hostWorkflows(unsafe.Pointer(unsafe.StringData(list)), uint32(len(list)))
	// Schemas are derived only when the host keeps them (at deploy): an
	// empty schema asks without giving one.
	if len(names) > 0 && hostInputSchema(strPtr(names[0]), uint32(len(names[0])), nil, 0) == 1 {
		for _, n := range names {
			s := inputs[n]()
			hostInputSchema(strPtr(n), uint32(len(n)), ptr(s), uint32(len(s)))
		}
	}

	inv, err := abi.DecodeInvocation(message(hostInvocation(bufArgs())))
	if err != nil {
		panic("skein: bad invocation message: " + err.Error())
	}
	fn := registry[inv.Workflow]
	input := append([]byte(nil), inv.Input...)
	root := &task{id: 1, resume: make(chan abi.Resume, 1)}
	root.body = func(ctx *Context) (uint32, []byte) {
		if fn == nil {
			return abi.StatusError, []byte(fmt.Sprintf("unknown workflow %q; this module registers: %s", inv.Workflow, strings.Join(names, ", ")))
		}
		return fn(ctx, input)
	}
	tasks[root.id] = root
	r, _ := next()
	if r.Kind != abi.ResumeStart || r.Task != root.id {
		panic(fmt.Sprintf("skein: host dispatched task %d first, want the root task", r.Task))
	}
	if startOnIdle(root) { // a spare goroutine, its stack grown already (prepare.go)
		select {} // the root task's end stops the module
	}
	root.run()
}

// startOnIdle hands t to a goroutine waiting in idle; false if none waits.
func startOnIdle(t *task) bool {
	if len(idle) == 0 {
		return false
	}
	wake := idle[len(idle)-1]
	idle = idle[:len(idle)-1]
	wake <- t
	return true
}

// run executes t on the calling goroutine, and after it every task the
// host starts when the one before has finished: a goroutine whose stack
// has grown goes on serving tasks, so new tasks neither create a
// goroutine nor grow a new one's stack again (in WebAssembly, copying a
// stack walks every frame's tables). A goroutine with no task to start
// waits in idle until dispatch hands it one.
func (t *task) run() { runTasks(t, nil) }

// runTasks runs t and the tasks after it on the calling goroutine; wake
// is the goroutine's channel in idle, nil until it first waits.
func runTasks(t *task, wake chan *task) {
	for t != nil {
		current = t
		status, data := t.protected()
		if current != t {
			misuse()
		}
		flushFeed()
		hostTaskDone(t.id, status, ptr(data), uint32(len(data)))
		delete(tasks, t.id)
		current = nil
		r, target := next()
		current = target
		if r.Kind == abi.ResumeStart {
			t = target
			continue
		}
		if wake == nil {
			wake = make(chan *task, 1)
		}
		idle = append(idle, wake)
		target.resume <- r
		t = <-wake
	}
}

func (t *task) protected() (status uint32, data []byte) {
	defer func() {
		if v := recover(); v != nil {
			status = abi.StatusPanic
			data = []byte(fmt.Sprintf("panic: %v\n\n%s", v, debug.Stack()))
		}
	}()
	return t.body(&Context{t: t})
}

// yield gives up control after the task registered a wait with the host,
// and returns what woke it.
func (t *task) yield() abi.Resume {
	current = nil
	return dispatch(t)
}

// dispatch asks the host which task runs next and hands control to it.
// self is the calling task, which has registered a wait with the host;
// dispatch returns when self is resumed.
func dispatch(self *task) abi.Resume {
	r, target := next()
	current = target
	if target == self {
		return r
	}
	if r.Kind != abi.ResumeStart {
		target.resume <- r
	} else if !startOnIdle(target) {
		go target.run()
	}
	r = <-self.resume
	current = self
	return r
}

// next asks the host which task runs next.
func next() (abi.Resume, *task) {
	flushFeed()
	r, err := abi.DecodeResume(message(hostNext(bufArgs())))
	if err != nil {
		panic("skein: bad resume message: " + err.Error())
	}
	target := tasks[r.Task]
	if target == nil {
		panic(fmt.Sprintf("skein: host dispatched unknown task %d", r.Task))
	}
	return r, target
}

// await waits until promise p settles and returns its outcome.
func (t *task) await(p uint32) abi.Outcome {
	flushFeed()
	w, err := abi.DecodeWait(message(hostAwait(t.id, p, ptr(scratch), uint32(len(scratch)))))
	if err != nil {
		panic("skein: bad await message: " + err.Error())
	}
	if w.Ready {
		return cloneOutcome(w.Outcome)
	}
	r := t.yield()
	return cloneOutcome(r.Outcome)
}

const misuseMsg = "skein: a Context was used from a goroutine that is not its task " +
	"(a raw go statement?): start concurrent work with skein.Go or skein.Parallel, " +
	"and use each task's own Context"

func misuse() { panic(misuseMsg) }

// check panics unless ctx belongs to the running task.
func (c *Context) check() {
	if c == nil || c.t == nil || current != c.t {
		misuse()
	}
}

func bufArgs() (unsafe.Pointer, uint32) { return ptr(scratch), uint32(len(scratch)) }

// message returns the n-byte message the host just produced: in scratch
// if it fitted, else fetched with take.
func message(n uint32) []byte {
	if int(n) <= len(scratch) {
		return scratch[:n]
	}
	b := make([]byte, n)
	if got := hostTake(ptr(b), n); got != n {
		panic(fmt.Sprintf("skein: host returned %d bytes for a %d-byte message", got, n))
	}
	return b
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

func strPtr(s string) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.StringData(s))
}

func cloneOutcome(o abi.Outcome) abi.Outcome {
	return abi.Outcome{Status: o.Status, Data: append([]byte(nil), o.Data...)}
}

// StepIDError reports an op name that breaks a naming rule; the op was not
// issued and its body did not run.
type StepIDError struct {
	Scope string // scope key ("" is the root)
	Name  string
	Rule  string
	Msg   string
}

func (e *StepIDError) Error() string { return e.Msg }

// decode turns an outcome into a typed value or an error. Live and
// replayed results both go through JSON, so they are identical.
func decode[T any](o abi.Outcome) (T, error) {
	var v T
	if o.Status != abi.StatusOK {
		msg := string(o.Data)
		if strings.HasPrefix(msg, canceledPrefix) {
			return v, &CanceledError{Reason: msg[len(canceledPrefix):]}
		}
		return v, errors.New(msg)
	}
	if len(o.Data) > 0 && !decodeFast(&v, o.Data) {
		return decodeJSON[T](o.Data)
	}
	return v, nil
}

// decodeJSON is decode's general case, apart so that decode's value
// stays off the heap when decodeFast takes it.
func decodeJSON[T any](data []byte) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("skein: decode %T: %w", v, err)
	}
	return v, nil
}

// encodeResult turns a value or an error into an outcome. It is generic
// so that a value encodeFast takes is not put on the heap first.
func encodeResult[T any](v T, err error) (uint32, []byte) {
	if err != nil {
		return abi.StatusError, []byte(err.Error())
	}
	if b, ok := encodeFast(v); ok {
		return abi.StatusOK, b
	}
	return encodeJSON(v)
}

func encodeJSON(v any) (uint32, []byte) {
	b, jerr := json.Marshal(v)
	if jerr != nil {
		return abi.StatusError, []byte("skein: value does not encode as JSON: " + jerr.Error())
	}
	return abi.StatusOK, b
}
