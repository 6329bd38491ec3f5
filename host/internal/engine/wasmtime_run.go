//go:build wasmtime

package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// wtInstance is the state of one Run, found by its store's key
// (wtStores): what the host and WASI functions called by the instance
// need.
type wtInstance struct {
	ctx    context.Context
	rc     RunConfig
	mem    *wasmtime.Memory // the instance's exported memory, if any
	view   wtMemory         // the memory during a host function call
	err    error            // the error of the host function that stopped it
	exit   *ExitError       // proc_exit's
	args   []byte           // RunConfig.Args, NUL-terminated, for args_get
	closed [3]bool          // stdin, stdout, stderr closed by the guest
}

// wtMemory is a linear memory as a slice, valid during one host
// function call (host functions do not grow the memory).
type wtMemory struct{ buf []byte }

func (m *wtMemory) Read(ptr, n uint32) ([]byte, bool) {
	if uint64(ptr)+uint64(n) > uint64(len(m.buf)) {
		return nil, false
	}
	return m.buf[ptr : ptr+n : ptr+n], true
}

func (m *wtMemory) Write(ptr uint32, b []byte) bool {
	if uint64(ptr)+uint64(len(b)) > uint64(len(m.buf)) {
		return false
	}
	copy(m.buf[ptr:], b)
	return true
}

// Run instantiates m in a store of its own and runs it to its end:
// _start of a command, skein_main of a reactor (after _initialize unless
// the module is its snapshot).
func (e *wtEngine) Run(ctx context.Context, m Module, c RunConfig) error {
	wm, ok := m.(*wtModule)
	if !ok {
		return fmt.Errorf("engine: module %T was not compiled by wasmtime", m)
	}
	return e.instantiate(ctx, wm.m, c, func(st *wasmtime.Store, inst *wasmtime.Instance) (string, error) {
		return callEntry(st, inst, wm.snap)
	})
}

// instantiate instantiates m in a store of its own that sees c and runs
// body on the instance; body returns the name of the function that
// failed for a trap's error ("" for none: see trapError). A panic out of wasmtime-go becomes an error: it
// never reaches the host.
func (e *wtEngine) instantiate(ctx context.Context, m *wasmtime.Module, c RunConfig, body func(*wasmtime.Store, *wasmtime.Instance) (string, error)) (err error) {
	in := &wtInstance{ctx: ctx, rc: c}
	for _, a := range c.Args {
		in.args = append(append(in.args, a...), 0)
	}
	if !e.acquire(nil) {
		return errClosed
	}
	defer e.release(nil)
	st := wasmtime.NewStore(e.eng)
	defer st.Close()
	st.Limiter(int64(e.cfg.MemoryLimitPages)*65536, -1, -1, -1, -1)
	var intr *interrupter
	if e.cfg.Interruptible {
		if intr = newInterrupter(st); intr == nil {
			return errors.New("engine: cannot interrupt the instance (out of memory)")
		}
		if !e.acquire(intr) { // for Close
			return errClosed
		}
		defer e.release(intr)
		defer intr.onDone(ctx, e.eng)()
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the engine failed: %v", p)
		}
	}()
	key := storeKey(st) // how the host functions find the instance (wasmtime_call.go)
	wtStores.Store(key, in)
	defer wtStores.Delete(key) // before the store is closed and its key reused
	inst, err := e.linker.Instantiate(st, m)
	fn := ""
	if err == nil {
		if ex := inst.GetExport(st, "memory"); ex != nil {
			in.mem = ex.Memory()
		}
		fn, err = body(st, inst)
	}
	switch {
	case in.err != nil:
		return in.err
	case in.exit != nil && in.exit.Code == 0:
		return nil // as wazero: exiting with 0 is success
	case in.exit != nil:
		return in.exit
	case err == nil:
		return nil
	case intr != nil && intr.fired.Load():
		// As wazero's close-on-context-done: "module closed with context canceled".
		if ctx.Err() != nil {
			return fmt.Errorf("module closed with %w", ctx.Err())
		}
		return errors.New("module closed with exit_code(0)") // by Close, as wazero's
	}
	return trapError(err, fn)
}

// trapNames are wazero's texts of the traps, so that a failed run reads
// the same on both engines.
var trapNames = map[wasmtime.TrapCode]string{
	wasmtime.StackOverflow:          "stack overflow",
	wasmtime.MemoryOutOfBounds:      "out of bounds memory access",
	wasmtime.HeapMisaligned:         "unaligned atomic",
	wasmtime.TableOutOfBounds:       "invalid table access",
	wasmtime.IndirectCallToNull:     "invalid table access",
	wasmtime.BadSignature:           "indirect call type mismatch",
	wasmtime.IntegerOverflow:        "integer overflow",
	wasmtime.IntegerDivisionByZero:  "integer divide by zero",
	wasmtime.BadConversionToInteger: "invalid conversion to integer",
	wasmtime.UnreachableCodeReached: "unreachable",
}

// trapError is err (a trap or a wasmtime error) in wazero's form:
// "module[] function[<fn>] failed: wasm error: <trap>" for a start
// function fn (wazero's _start, or _initialize; "wasm error: <trap>" for
// a function called after instantiation, fn "") and the wasm
// stack (frames without their signatures, which wasmtime does not give),
// without wasmtime's native backtrace.
func trapError(err error, fn string) error {
	var t *wasmtime.Trap
	if !errors.As(err, &t) {
		return fmt.Errorf("wasmtime: %s", errorText(err))
	}
	msg := firstLine(t.Message())
	if code := t.Code(); code != nil {
		if name, ok := trapNames[*code]; ok {
			msg = name
		}
	}
	var b strings.Builder
	if fn != "" {
		b.WriteString("module[] function[" + fn + "] failed: ")
	}
	b.WriteString("wasm error: " + msg + "\nwasm stack trace:")
	for _, f := range t.Frames() {
		if n := f.FuncName(); n != nil {
			fmt.Fprintf(&b, "\n\t%s()", *n)
		} else {
			fmt.Fprintf(&b, "\n\t.$%d()", f.FuncIndex())
		}
	}
	return errors.New(b.String())
}

// errorText is a wasmtime error's message on one line: the message and
// its causes, without the native backtrace.
func errorText(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n\nStack backtrace:")
	msg, causes, _ := strings.Cut(s, "\n\nCaused by:\n")
	parts := []string{firstLine(msg)}
	first := true
	for _, l := range strings.Split(causes, "\n") {
		l = strings.TrimSpace(l)
		i := strings.Index(l, ": ")
		numbered := i > 0 && strings.Trim(l[:i], "0123456789") == ""
		switch {
		case l == "":
		case numbered:
			parts = append(parts, l[i+2:]) // "0: a cause"
		case first:
			parts = append(parts, l)
		default:
			parts[len(parts)-1] += " " + l // a cause's next line
		}
		first = first && l == ""
	}
	return strings.Join(parts, ": ")
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// callEntry runs an instance: _start of a command, or skein_main of a
// reactor, after _initialize unless the module is its snapshot (snap).
// fn names the function that failed as wazero would: its start
// functions (_start, _initialize) by name, skein_main, which it calls
// after instantiation, by "".
func callEntry(st *wasmtime.Store, inst *wasmtime.Instance, snap bool) (fn string, err error) {
	if !snap {
		if start := inst.GetFunc(st, "_start"); start != nil {
			_, err := start.Call(st)
			return "_start", err
		}
	}
	init, entry := inst.GetFunc(st, ReactorInit), inst.GetFunc(st, ReactorEntry)
	if entry == nil || init == nil && !snap {
		return "", errors.New("the module exports no _start function")
	}
	if !snap {
		if fn, err := startUp(st, inst); err != nil {
			return fn, err
		}
	}
	_, err = entry.Call(st)
	return "", err
}

// startUp runs a reactor's start-up (reactorStartUp, as wazero's start
// functions). fn names the function that failed.
func startUp(st *wasmtime.Store, inst *wasmtime.Instance) (fn string, err error) {
	for _, name := range reactorStartUp {
		if f := inst.GetFunc(st, name); f != nil {
			if _, err := f.Call(st); err != nil {
				return name, err
			}
		}
	}
	return "", nil
}
