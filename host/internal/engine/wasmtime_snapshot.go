//go:build wasmtime

package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// Snapshots on wasmtime. wasmtime gives an instance no memory but its
// own, initialised from the module's data segments (copy-on-write from
// the compiled module's image: Config.NoMemoryImages off). So the engine
// takes a reactor's snapshot as wazero does (one run of its start-up,
// _initialize and skein_prepare, in the world of initWorld) and compiles
// the module rewritten to start in that state (snapshotwasm.go):
// instances call skein_main only. The disk cache keeps the rewritten
// module's code under the original's hash, so a process that finds it
// runs no start-up.

// snapshotTag names a snapshot in the disk cache; it changes when what
// a snapshot holds does (initWorld, the rewrite, skein_prepare: snap2).
const snapshotTag = ".snap2"

// compileSnapshot compiles a reactor module as its snapshot, or loads the
// snapshot from the disk cache. It runs the module as it is (with exports
// for its globals) when it cannot be snapshotted: snap false.
func (e *wtEngine) compileSnapshot(ctx context.Context, key [32]byte, wasm []byte, sections []wasmSection, s reactorShape) (m *wasmtime.Module, snap bool, err error) {
	path := e.cachePath(key, snapshotTag)
	if m := e.loadCached(path); m != nil {
		return m, true, nil
	}
	orig, err := e.compileWasm(assemble(wasm, exportGlobals(sections, s), -1, nil))
	if err != nil {
		return nil, false, err
	}
	if err := e.checkModule(orig); err != nil { // imports first, as wazero: the run needs them
		orig.Close()
		return nil, false, err
	}
	globals, mem, err := e.snapshot(ctx, orig, s)
	if err != nil {
		orig.Close()
		return nil, false, err
	}
	var rewritten []byte
	if globals != nil {
		rewritten, err = snapshotWasm(wasm, globals, mem)
	}
	if globals == nil || err != nil {
		return orig, false, nil // a form the rewrite does not handle: instances run _initialize
	}
	orig.Close()
	m, err = e.compileCached(path, rewritten)
	return m, err == nil, err
}

// snapshot runs the reactor's start-up (startUp) once in the world of initWorld
// (bounded by Config.InitTimeout, as wazero's) and returns the values of
// its mutable globals and its linear memory; nil globals when they
// cannot be read (a module without an exported memory, a global that is
// not a number).
func (e *wtEngine) snapshot(ctx context.Context, m *wasmtime.Module, s reactorShape) (globals map[uint32]uint64, mem []byte, err error) {
	ictx, cancel, limit := initContext(ctx, e.cfg.InitTimeout)
	defer cancel()
	var stderr strings.Builder
	err = e.instantiate(ictx, m, initWorld(&limitedWriter{w: &stderr, n: 4096}), func(st *wasmtime.Store, inst *wasmtime.Instance) (string, error) {
		fn, err := startUp(st, inst)
		globals, mem = readState(st, inst, s) // also after proc_exit(0), which is success (as wazero)
		return fn, err
	})
	if ee := (*ExitError)(nil); errors.As(err, &ee) {
		err = fmt.Errorf("module closed with exit_code(%d)", ee.Code) // wazero's text
	}
	switch {
	case err == nil:
		return globals, mem, nil
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case errors.Is(ictx.Err(), context.DeadlineExceeded):
		return nil, nil, &InitTimeoutError{Limit: limit}
	}
	return nil, nil, &InvalidError{Err: fmt.Errorf("its start-up (%s) failed: %w%s", ReactorInit, err, tail(stderr.String()))}
}

// readState reads an instance's mutable globals (by index, through the
// exports exportGlobals added) and a copy of its exported memory; nil
// globals when it cannot.
func readState(st *wasmtime.Store, inst *wasmtime.Instance, s reactorShape) (map[uint32]uint64, []byte) {
	ex := inst.GetExport(st, "memory")
	if ex == nil || ex.Memory() == nil {
		return nil, nil
	}
	globals := map[uint32]uint64{}
	for g := s.first; g < s.first+s.globals; g++ {
		ex := inst.GetExport(st, fmt.Sprintf("%s%d", globalExportPrefix, g))
		if ex == nil || ex.Global() == nil {
			return nil, nil
		}
		gl := ex.Global()
		if !gl.Type(st).Mutable() {
			continue
		}
		switch v := gl.Get(st); v.Kind() {
		case wasmtime.KindI32:
			globals[uint32(g)] = uint64(uint32(v.I32()))
		case wasmtime.KindI64:
			globals[uint32(g)] = uint64(v.I64())
		case wasmtime.KindF32:
			globals[uint32(g)] = uint64(math.Float32bits(v.F32()))
		case wasmtime.KindF64:
			globals[uint32(g)] = math.Float64bits(v.F64())
		default:
			return nil, nil
		}
	}
	return globals, append([]byte(nil), ex.Memory().UnsafeData(st)...)
}
