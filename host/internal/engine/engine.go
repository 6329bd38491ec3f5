// Package engine is skein's one door to a WebAssembly engine: compiling
// a module, running an instance of it with the ABI's host functions,
// reading and writing the instance's memory and interrupting it. Nothing
// else in skein imports an engine. wazero implements it (NewWazero);
// everything wazero-specific lives here: its compilation cache, the
// memory images and merged data segments that make instantiation cheap,
// the reserve-then-commit linear memory, and the check of a module's
// imports against what the host provides.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skeinrun/skein/host/internal/wasmlimits"
)

// ValueType is a WebAssembly value type in a host function's signature,
// encoded as in the binary format.
type ValueType byte

// The value types of the skein ABI.
const (
	I32 ValueType = 0x7f
	I64 ValueType = 0x7e
)

// String is the type's name in the text format: "i32" or "i64".
func (t ValueType) String() string {
	switch t {
	case I32:
		return "i32"
	case I64:
		return "i64"
	case 0x7d:
		return "f32"
	case 0x7c:
		return "f64"
	case 0x6f:
		return "externref"
	}
	return "unknown" // as wazero's api.ValueTypeName
}

// FuncType is a function signature.
type FuncType struct {
	Params, Results []ValueType
}

// Memory is an instance's linear memory as a host function sees it.
type Memory interface {
	// Read returns n bytes at ptr, aliasing the memory (valid until the
	// guest runs again); ok is false when they are out of bounds.
	Read(ptr, n uint32) (b []byte, ok bool)
	// Write copies b to ptr; it reports false when out of bounds.
	Write(ptr uint32, b []byte) bool
}

// HostFunc is a function the host module exports to guests.
type HostFunc struct {
	Name string
	Type FuncType
	// Call runs the function with its arguments in stack and writes its
	// results there. ctx is the one given to Engine.Run. A non-nil error
	// stops the instance: the guest runs no further and Run returns that
	// error.
	Call func(ctx context.Context, mem Memory, stack []uint64) error
}

// Config configures an engine.
type Config struct {
	// HostModule names the module whose functions guests import
	// (abi.Module); HostFuncs are its functions.
	HostModule string
	HostFuncs  []HostFunc
	// CacheDir keeps compiled machine code on disk across processes; ""
	// keeps it in memory only.
	CacheDir string
	// MemoryLimitPages bounds every instance's linear memory (64 KiB
	// pages).
	MemoryLimitPages uint32
	// Interruptible makes the end of Run's context stop running guest
	// code at once, at a cost in guest speed.
	Interruptible bool
	// WazeroCloseOnDone makes an Interruptible wazero engine use wazero's
	// own interrupt (RuntimeConfig.WithCloseOnContextDone) instead of the
	// flag checks it adds to every module (interrupt.go). For comparisons.
	WazeroCloseOnDone bool
	// NoMemoryImages turns off the copy-on-write images of a module's
	// initial memory: instances copy its (merged) data segments instead.
	NoMemoryImages bool
	// NoSnapshots runs a reactor module's _initialize in every instance
	// instead of starting instances from its state after one run of it
	// (reactor.go).
	NoSnapshots bool
	// NoRecycling closes every instance when its run ends, instead of
	// resetting an instance of a snapshotted reactor to the snapshot and
	// reusing it for the module's next run (wazero_recycle.go).
	NoRecycling bool
	// InitTimeout bounds the run of a reactor's _initialize that takes
	// its snapshot (Interruptible engines only); 0 means 10 s.
	InitTimeout time.Duration
	// SliceMemory gives instances a Go slice as linear memory, grown by
	// copying, instead of reserved address space (for comparisons).
	SliceMemory bool
}

// Engine compiles modules and runs instances of them. It is safe for
// concurrent use.
type Engine interface {
	// Compile compiles a module as o says and checks its imports.
	// Errors: *InvalidError (the engine refuses the module),
	// *ImportError (it imports what the host does not provide, or is
	// not a skein module), or ctx's error.
	Compile(ctx context.Context, wasm []byte, o CompileOptions) (Module, error)
	// Run instantiates m and runs its _start function to its end. It
	// returns nil when _start returned, the error of the host function
	// that stopped the instance, an *ExitError when the guest exited, or
	// another error when it trapped or ctx ended (see Config.Interruptible).
	Run(ctx context.Context, m Module, c RunConfig) error
	// Close releases the engine; its modules must be closed first.
	Close(ctx context.Context) error
}

// CompileOptions is what Compile is told besides the module's bytes.
type CompileOptions struct {
	// Workers is how many goroutines compile: two or more let ctx stop
	// the compilation between functions; one ignores ctx.
	Workers int
	// Reusable says that the module's code changes nothing of an
	// instance but its linear memory and globals: no instruction writes
	// a table or drops a segment (wasmlimits.Shape.StateWrites, which
	// the host measures before every compile). Only then may an
	// instance be reset and reused (wazero_recycle.go).
	Reusable bool
	// Shape is the module's measured shape, if the caller has it (the
	// host measures every module before it compiles it): the wazero
	// engine takes the places of its interrupt checks from Shape.Loops
	// instead of walking the code again (interrupt.go).
	Shape *wasmlimits.Shape
}

// Module is a compiled module. Close it when no instance needs it.
type Module interface {
	// CodeBytes is the size of the module as compiled (data segments
	// split off or merged), ImageBytes that of its memory image (0 when
	// it has none): what it keeps in memory besides machine code.
	CodeBytes() int
	ImageBytes() int64
	// Snapshotted reports whether instances start from a snapshot of
	// the module after its start-up (a reactor module; reactor.go).
	Snapshotted() bool
	Close(ctx context.Context) error
}

// RunConfig is what an instance sees of the world through WASI: its
// output, its clocks and its randomness.
type RunConfig struct {
	Args           []string
	Stdout, Stderr io.Writer
	Walltime       func() (sec int64, nsec int32)
	Nanotime       func() int64
	Nanosleep      func(ns int64)
	Rand           io.Reader
	// Reused, if set, is called when the run starts on an instance
	// that an earlier run of the module used and the engine reset.
	Reused func()
}

// InvalidError reports a module the engine refuses to compile. Stack is
// set when the engine's compiler panicked on it (the host logs it).
type InvalidError struct {
	Err   error
	Stack string
}

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// ImportError reports a module whose imports the host does not provide.
type ImportError struct{ Reason string }

func (e *ImportError) Error() string { return e.Reason }

// InitTimeoutError reports a reactor module whose _initialize did not
// finish within Config.InitTimeout.
type InitTimeoutError struct{ Limit time.Duration }

func (e *InitTimeoutError) Error() string {
	return fmt.Sprintf("its start-up (_initialize) did not finish within %s", e.Limit)
}

// ExitError reports a guest that exited (WASI proc_exit) with Code.
type ExitError struct{ Code uint32 }

func (e *ExitError) Error() string { return fmt.Sprintf("the module exited with code %d", e.Code) }

// The engines New knows.
const (
	Wazero   = "wazero"   // pure Go, the default
	Wasmtime = "wasmtime" // cgo, in binaries built with -tags wasmtime
)

// ErrNoWasmtime is the error of asking for wasmtime in a binary built
// without it (HasWasmtime is false).
var ErrNoWasmtime = errors.New(`engine "wasmtime" is not in this binary: build skein with it: ` +
	"`go build -tags wasmtime ./cmd/skein` (needs cgo: CGO_ENABLED=1 and a C compiler)")

// New returns the engine called name: Wazero ("" too) or Wasmtime.
// Asking for Wasmtime in a binary built without it is an error that
// says how to build one with it.
func New(ctx context.Context, name string, cfg Config) (Engine, error) {
	switch name {
	case "", Wazero:
		return NewWazero(ctx, cfg)
	case Wasmtime:
		return newWasmtime(ctx, cfg)
	}
	return nil, fmt.Errorf("unknown engine %q (want %q or %q)", name, Wazero, Wasmtime)
}

// Name is the name of e's engine: Wazero or Wasmtime.
func Name(e Engine) string {
	if n, ok := e.(interface{ name() string }); ok {
		return n.name()
	}
	return ""
}
