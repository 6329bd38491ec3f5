// Command hostile is a skein module written against the raw ABI (no SDK:
// //go:wasmimport declarations only) that attacks the host: each
// workflow is one attack with bad pointers, lengths, handles, statuses or
// call orders. The host must end each run with a precise error and never
// panic (host/hostile_test.go). Pointers are declared as uint32 so that
// any address can be passed.
package main

import (
	"encoding/binary"
	"strings"
	"unsafe"

	"github.com/skeinrun/skein/abi"
)

//go:wasmimport skein hello
func hello(version uint32) uint32

//go:wasmimport skein workflows
func workflows(ptr, n uint32)

//go:wasmimport skein invocation
func invocation(buf, capacity uint32) uint32

//go:wasmimport skein take
func take(buf, n uint32) uint32

//go:wasmimport skein next
func next(buf, capacity uint32) uint32

//go:wasmimport skein op
func op(task, kind, name, nameLen, fn, fnLen, arg, argLen, buf, capacity uint32) uint32

//go:wasmimport skein step_done
func stepDone(task, promise, status, ptr, n uint32) uint32

//go:wasmimport skein await
func await(task, promise, buf, capacity uint32) uint32

//go:wasmimport skein select
func selectFn(task, ptr, n, buf, capacity uint32) uint32

//go:wasmimport skein task_done
func taskDone(task, status, ptr, n uint32)

//go:wasmimport skein body_sleep
func bodySleep(task uint32, ns int64)

//go:wasmimport skein real_now
func realNow() int64

//go:wasmimport skein real_rand
func realRand(ptr, n uint32)

//go:wasmimport skein op_options
func opOptions(task, ptr, n uint32)

//go:wasmimport skein feed
func feed(task, used, buf, capacity uint32) uint32

var out = make([]byte, 1<<16)

// far is an address beyond any linear memory the host allows.
const far = 0xFFFF_FF00

func bp(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

func sp(s string) uint32 {
	if s == "" {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))
}

func doOp(task uint32, kind abi.OpKind, name, fn string, arg []byte) abi.OpResult {
	n := op(task, uint32(kind), sp(name), uint32(len(name)), sp(fn), uint32(len(fn)), bp(arg), uint32(len(arg)), bp(out), uint32(len(out)))
	r, _ := abi.DecodeOpResult(out[:n])
	return r
}

func start() abi.Resume {
	n := next(bp(out), uint32(len(out)))
	r, _ := abi.DecodeResume(out[:n])
	return r
}

// body starts a step from task 1 and returns its promise (the body runs).
func body() uint32 {
	r := doOp(1, abi.OpStep, "", "s", nil)
	if r.State != abi.StateRunBody {
		panic("want state run-body")
	}
	return r.Promise
}

func finish(status uint32, data string) { taskDone(1, status, sp(data), uint32(len(data))) }

var attacks = map[string]func(){
	// well-behaved: one step, then the result.
	"ok": func() {
		start()
		p := body()
		stepDone(1, p, abi.StatusOK, sp("1"), 1)
		finish(abi.StatusOK, `"fine"`)
	},
	// pointers and lengths out of bounds
	"oob-name":  func() { start(); op(1, uint32(abi.OpStep), far, 64, sp("s"), 1, 0, 0, bp(out), uint32(len(out))) },
	"oob-len":   func() { start(); op(1, uint32(abi.OpStep), 0, 0, 0, 0x7FFF_FFFF, 0, 0, bp(out), uint32(len(out))) },
	"oob-reply": func() { next(far, 0xFF) },
	"oob-take": func() {
		n := next(bp(out), 0) // too small: the message waits for take
		take(far, n)
	},
	"take-none":     func() { take(bp(out), 10) },
	"take-twice":    func() { n := next(bp(out), 0); take(bp(out), n); take(bp(out), n) },
	"oob-step-data": func() { start(); p := body(); stepDone(1, p, abi.StatusOK, far, 0x1000) },
	"oob-rand":      func() { start(); body(); realRand(far, 0x1000) },
	"oob-select":    func() { start(); selectFn(1, far, 4, bp(out), uint32(len(out))) },
	// unknown handles
	"unknown-task":    func() { start(); doOp(99, abi.OpStep, "", "s", nil) },
	"not-running":     func() { doOp(1, abi.OpStep, "", "s", nil) },
	"unknown-promise": func() { start(); await(1, 4242, bp(out), uint32(len(out))) },
	"promise-zero":    func() { start(); await(1, 0, bp(out), uint32(len(out))) },
	"unknown-fork": func() {
		start()
		var h [4]byte
		binary.LittleEndian.PutUint32(h[:], 7)
		doOp(1, abi.OpBranch, "", "", h[:])
	},
	"await-own-join": func() { start(); await(1, 1, bp(out), uint32(len(out))) },
	// settling twice, calls after the task or workflow ended
	"settle-twice": func() {
		start()
		p := body()
		stepDone(1, p, abi.StatusOK, sp("1"), 1)
		stepDone(1, p, abi.StatusOK, sp("2"), 1)
	},
	"task-done-twice": func() {
		start()
		sp := doOp(1, abi.OpSpawn, "", "", nil)
		await(1, sp.Promise, bp(out), uint32(len(out))) // not ready: yield
		r := start()                                    // task 2 starts
		taskDone(r.Task, abi.StatusOK, 0, 0)
		taskDone(r.Task, abi.StatusOK, 0, 0)
	},
	"op-after-task-done": func() {
		start()
		s := doOp(1, abi.OpSpawn, "", "", nil)
		await(1, s.Promise, bp(out), uint32(len(out)))
		r := start()
		taskDone(r.Task, abi.StatusOK, 0, 0)
		doOp(r.Task, abi.OpStep, "", "s", nil)
	},
	"op-after-return": func() {
		start()
		finish(abi.StatusOK, `"done"`)
		doOp(1, abi.OpStep, "", "after", nil) // never runs: the host ended the module
		panic("the host returned from the root's task_done")
	},
	"next-while-running": func() { start(); start() },
	// bad values
	"bad-kind":        func() { start(); doOp(1, 99, "", "s", nil) },
	"bad-step-status": func() { start(); p := body(); stepDone(1, p, 7, 0, 0) },
	"bad-task-status": func() { start(); taskDone(1, 9, 0, 0) },
	"bad-sleep-arg":   func() { start(); doOp(1, abi.OpSleep, "", "", []byte{1, 2}) },
	"bad-branch-arg":  func() { start(); doOp(1, abi.OpBranch, "", "", []byte{1, 2, 3}) },
	"bad-attrs-arg":   func() { start(); doOp(1, abi.OpAttrs, "", "", []byte("[1]")) },
	"empty-fn":        func() { start(); doOp(1, abi.OpStep, "", "", nil) },
	"select-none":     func() { start(); selectFn(1, bp(out), 0, bp(out), uint32(len(out))) },
	"select-huge":     func() { start(); selectFn(1, bp(out), 1<<20, bp(out), uint32(len(out))) },
	"bad-options":     func() { start(); opOptions(1, sp("xyz"), 3) },
	"options-task":    func() { start(); opOptions(5, 0, 0) },
	"options-sleep": func() {
		start()
		o := abi.AppendOpOptions(nil, abi.OpOptions{MaxAttempts: 3})
		opOptions(1, bp(o), uint32(len(o)))
		var d [8]byte
		doOp(1, abi.OpSleep, "", "", d[:])
	},
	// misuse of the feed (a live run's feed is empty)
	"oob-feed":   func() { start(); feed(1, 0, far, 64) },
	"feed-task":  func() { start(); feed(5, 0, bp(out), uint32(len(out))) },
	"feed-unfed": func() { start(); feed(1, 3, 0, 0) },
	// misuse of step bodies
	"real-now-outside":   func() { start(); realNow() },
	"real-rand-outside":  func() { start(); realRand(bp(out), 8) },
	"body-sleep-outside": func() { start(); bodySleep(1, 10) },
	"op-in-body":         func() { start(); body(); doOp(1, abi.OpStep, "", "inner", nil) },
	"await-in-body": func() {
		start()
		p := body()
		await(1, p, bp(out), uint32(len(out)))
	},
	"unknown-activity": func() { start(); doOp(1, abi.OpCall, "", "no-such-activity", []byte("null")) },
	// oversized buffers
	"huge-step-value": func() {
		start()
		p := body()
		big := make([]byte, 5<<20)
		stepDone(1, p, abi.StatusOK, bp(big), uint32(len(big)))
	},
	"huge-result": func() {
		start()
		big := make([]byte, 5<<20)
		taskDone(1, abi.StatusOK, bp(big), uint32(len(big)))
	},
	"huge-call-input": func() {
		start()
		big := make([]byte, 5<<20)
		doOp(1, abi.OpCall, "", "echo", big)
	},
}

func main() {
	hello(abi.Version)
	names := make([]string, 0, len(attacks))
	for name := range attacks {
		names = append(names, name)
	}
	list := strings.Join(names, "\n")
	workflows(sp(list), uint32(len(list)))
	n := invocation(bp(out), uint32(len(out)))
	inv, err := abi.DecodeInvocation(out[:n])
	if err != nil {
		panic(err)
	}
	attacks[inv.Workflow]()
	panic("the host did not stop attack " + inv.Workflow)
}
