//go:build wasmtime

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// HasWasmtime reports whether this binary was built with the wasmtime
// engine (-tags wasmtime).
const HasWasmtime = true

// wasmtimeVersion names the wasmtime-go release whose serialized
// modules the disk cache holds: another release cannot read them.
const wasmtimeVersion = "wasmtime-go-v39.0.1"

// wtEngine is the Engine on wasmtime (Cranelift): one wasmtime engine
// and one linker holding the host module's and the WASI functions (all
// Go functions: wasmtime's own WASI cannot take skein's virtual clocks,
// seeded randomness or output writers), shared by every instance; each
// Run gets a store of its own.
type wtEngine struct {
	provided // the WASI and host functions, for the import check
	cfg      Config
	eng      *wasmtime.Engine
	linker   *wasmtime.Linker
	cacheDir string // serialized modules; "" for none

	mu      sync.Mutex
	byHash  map[[32]byte]*wtCompiled  // compiled modules in use, by the sha256 of their bytes
	refs    int                       // Compile and Run calls under way
	closed  bool                      // Close was called: freed when refs drops to 0
	running map[*interrupter]struct{} // the interruptible guests running, for Close
}

func newWasmtime(ctx context.Context, cfg Config) (_ Engine, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("wasmtime: %v", p)
		}
	}()
	wasi, err := wasiTypes(ctx)
	if err != nil {
		return nil, err
	}
	wc := wasmtime.NewConfig()
	wc.SetEpochInterruption(cfg.Interruptible)
	wc.SetMemoryInitCOWSet(!cfg.NoMemoryImages)
	e := &wtEngine{cfg: cfg, eng: wasmtime.NewEngineWithConfig(wc), byHash: map[[32]byte]*wtCompiled{}, running: map[*interrupter]struct{}{},
		provided: provided{hostModule: cfg.HostModule, host: map[string]FuncType{}, wasi: wasi}}
	e.linker = wasmtime.NewLinker(e.eng)
	if cfg.CacheDir != "" {
		e.cacheDir = filepath.Join(cfg.CacheDir, wasmtimeVersion+codeVariant(cfg))
		if err := os.MkdirAll(e.cacheDir, 0o755); err != nil {
			_ = e.Close(ctx) // the cache's error is the one to return
			return nil, fmt.Errorf("compilation cache %s: %w", cfg.CacheDir, err)
		}
	}
	for _, f := range cfg.HostFuncs {
		e.host[f.Name] = f.Type
		if err := defineFunc(e.linker, cfg.HostModule, f.Name, f.Type, hostFunc(f)); err != nil { // wasmtime_call.go
			_ = e.Close(ctx) // the definition's error is the one to return
			return nil, fmt.Errorf("host module %s: %s: %w", cfg.HostModule, f.Name, err)
		}
	}
	if err := e.defineWASI(); err != nil { // wasmtime_wasi.go
		_ = e.Close(ctx) // the definition's error is the one to return
		return nil, fmt.Errorf("wasi: %w", err)
	}
	return e, nil
}

// codeVariant names the settings that change the machine code wasmtime
// generates, which a serialized module must have been compiled with:
// each has a cache folder of its own.
func codeVariant(cfg Config) string {
	v := ""
	if cfg.Interruptible {
		v += "-epoch"
	}
	if cfg.NoMemoryImages {
		v += "-nocow"
	}
	return v
}

// wtFuncType is t as wasmtime's.
func wtFuncType(t FuncType) *wasmtime.FuncType {
	conv := func(ts []ValueType) []*wasmtime.ValType {
		out := make([]*wasmtime.ValType, len(ts))
		for i, v := range ts {
			k := wasmtime.KindI32
			switch v {
			case I64:
				k = wasmtime.KindI64
			case 0x7d:
				k = wasmtime.KindF32
			case 0x7c:
				k = wasmtime.KindF64
			}
			out[i] = wasmtime.NewValType(k)
		}
		return out
	}
	return wasmtime.NewFuncType(conv(t.Params), conv(t.Results))
}

// wtCompiled is a compiled module shared by the wtModules of the same
// bytes: compiling a module in use again costs nothing, and its code is
// freed when the last of them is closed (as wazero frees a compiled
// module on Close).
type wtCompiled struct {
	m    *wasmtime.Module
	snap bool // m is a reactor's snapshot (wasmtime_snapshot.go)
	refs int
}

// wtModule is a module compiled by wasmtime.
type wtModule struct {
	e         *wtEngine
	key       [32]byte
	m         *wasmtime.Module
	snap      bool // m is a reactor's snapshot: instances call skein_main only
	codeBytes int
	closed    sync.Once
}

func (m *wtModule) CodeBytes() int    { return m.codeBytes }
func (m *wtModule) ImageBytes() int64 { return 0 } // wasmtime's memory images are part of its code
func (m *wtModule) Snapshotted() bool { return m.snap }

// Close drops the module's reference to its compiled code.
func (m *wtModule) Close(context.Context) error {
	m.closed.Do(func() {
		e := m.e
		e.mu.Lock()
		defer e.mu.Unlock()
		if c := e.byHash[m.key]; c != nil {
			if c.refs--; c.refs == 0 {
				delete(e.byHash, m.key)
				c.m.Close() // wasmtime's module is reference-counted: an instance keeps its own
			}
		}
	})
	return nil
}

// Compile compiles wasm, or takes it from a module in use or from the
// disk cache (a serialized module), and checks its imports. A reactor
// module is compiled as its snapshot (wasmtime_snapshot.go) unless
// Config.NoSnapshots. wasmtime compiles on its own threads and cannot be
// stopped: workers is not used, and ctx only bounds the run of a
// reactor's _initialize (the host stops waiting at its deadline).
func (e *wtEngine) Compile(ctx context.Context, wasm []byte, _ CompileOptions) (Module, error) {
	if !e.acquire(nil) {
		return nil, errClosed
	}
	defer e.release(nil)
	key := sha256.Sum256(wasm)
	e.mu.Lock()
	var m *wasmtime.Module
	snap := false
	if c := e.byHash[key]; c != nil {
		m, snap = c.m, c.snap
		c.refs++ // held while checked
	}
	e.mu.Unlock()
	if m == nil {
		var err error
		if m, snap, err = e.compile(ctx, key, wasm); err != nil {
			return nil, err
		}
		e.mu.Lock()
		if c := e.byHash[key]; c != nil { // compiled meanwhile
			m.Close()
			m, snap = c.m, c.snap
			c.refs++
		} else {
			e.byHash[key] = &wtCompiled{m: m, snap: snap, refs: 1}
		}
		e.mu.Unlock()
	}
	wm := &wtModule{e: e, key: key, m: m, snap: snap, codeBytes: len(wasm)}
	if err := e.checkModule(m); err != nil {
		_ = wm.Close(ctx) // the check's error is the one to return
		return nil, err
	}
	return wm, nil
}

// compile compiles wasm, as its snapshot when it is a reactor (snap
// true), or reads it from the disk cache.
func (e *wtEngine) compile(ctx context.Context, key [32]byte, wasm []byte) (m *wasmtime.Module, snap bool, err error) {
	sections, err := sectionsOf(wasm)
	var shape reactorShape
	if err == nil {
		shape, err = shapeOf(sections)
	}
	if err != nil || !shape.reactor || e.cfg.NoSnapshots {
		m, err := e.compileCached(e.cachePath(key, ""), wasm) // the compiler reports what is wrong
		return m, false, err
	}
	return e.compileSnapshot(ctx, key, wasm, sections, shape)
}

// cachePath is the disk cache's file of the module whose original bytes
// hash to key, with tag naming what was compiled of them; "" without a
// disk cache.
func (e *wtEngine) cachePath(key [32]byte, tag string) string {
	if e.cacheDir == "" {
		return ""
	}
	return filepath.Join(e.cacheDir, hex.EncodeToString(key[:])+tag+".cwasm")
}

// loadCached reads the serialized module at path; nil when there is
// none or it is unreadable (removed: it will be written again).
func (e *wtEngine) loadCached(path string) *wasmtime.Module {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	m, err := wasmtime.NewModuleDeserializeFile(e.eng, path)
	if err != nil {
		_ = os.Remove(path) // unreadable (another build of wasmtime?): compile again, and write it anew
		return nil
	}
	return m
}

// compileCached compiles wasm or reads it from the disk cache at path
// ("" for none), writing the cache when it compiled.
func (e *wtEngine) compileCached(path string, wasm []byte) (*wasmtime.Module, error) {
	if m := e.loadCached(path); m != nil {
		return m, nil
	}
	m, err := e.compileWasm(wasm)
	if err == nil && path != "" {
		if b, err := m.Serialize(); err == nil {
			_ = writeAtomic(path, b) // a cache: a failed write costs a compilation later
		}
	}
	return m, err
}

// compileWasm runs wasmtime's compiler, turning a panic out of it into
// an *InvalidError carrying the stack.
func (e *wtEngine) compileWasm(wasm []byte) (m *wasmtime.Module, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, &InvalidError{Err: fmt.Errorf("the compiler failed on it: %v", p), Stack: string(debug.Stack())}
		}
	}()
	m, err = wasmtime.NewModule(e.eng, wasm)
	if err != nil {
		return nil, &InvalidError{Err: errors.New(errorText(err))}
	}
	return m, nil
}

// writeAtomic writes b to path through a temporary file in its
// directory, so that no reader sees a partial file.
func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name()) // a temporary file: err is the one to return
	}
	return err
}

// checkModule checks m's imports (imports.go) and its memory against
// the memory limit, with wazero's messages.
func (e *wtEngine) checkModule(m *wasmtime.Module) error {
	var imports []importedFunc
	for _, it := range m.Imports() {
		ft := it.Type().FuncType()
		if ft == nil {
			continue // as wazero: only functions are checked
		}
		name := ""
		if n := it.Name(); n != nil {
			name = *n
		}
		imports = append(imports, importedFunc{module: it.Module(), name: name, params: fromWT(ft.Params()), results: fromWT(ft.Results())})
	}
	funcs := map[string]bool{}
	for _, ex := range m.Exports() {
		switch t := ex.Type(); {
		case t.FuncType() != nil:
			funcs[ex.Name()] = true
		case t.MemoryType() != nil:
			if err := e.checkMemory(t.MemoryType()); err != nil {
				return err
			}
		}
	}
	return e.provided.checkImports(imports, hasEntry(func(name string) bool { return funcs[name] }))
}

// checkMemory refuses a memory whose minimum (or declared maximum) is
// over the limit, as wazero does when it compiles.
func (e *wtEngine) checkMemory(mt *wasmtime.MemoryType) error {
	limit := uint64(e.cfg.MemoryLimitPages)
	if limit == 0 {
		return nil
	}
	if has, max := mt.Maximum(); has && max > limit {
		return &InvalidError{Err: fmt.Errorf("section memory: max %d pages (%s) over limit of %d pages (%s)", max, pagesUnit(max), limit, pagesUnit(limit))}
	}
	if min := mt.Minimum(); min > limit {
		return &InvalidError{Err: fmt.Errorf("section memory: min %d pages (%s) over limit of %d pages (%s)", min, pagesUnit(min), limit, pagesUnit(limit))}
	}
	return nil
}

// pagesUnit is wazero's PagesToUnitOfBytes.
func pagesUnit(pages uint64) string {
	k := pages * 64
	switch {
	case k < 1024:
		return fmt.Sprintf("%d Ki", k)
	case k>>10 < 1024:
		return fmt.Sprintf("%d Mi", k>>10)
	case k>>20 < 1024:
		return fmt.Sprintf("%d Gi", k>>20)
	}
	return fmt.Sprintf("%d Ti", k>>30)
}

func fromWT(ts []*wasmtime.ValType) []ValueType {
	out := make([]ValueType, len(ts))
	for i, t := range ts {
		switch t.Kind() {
		case wasmtime.KindI32:
			out[i] = I32
		case wasmtime.KindI64:
			out[i] = I64
		case wasmtime.KindF32:
			out[i] = 0x7d
		case wasmtime.KindF64:
			out[i] = 0x7c
		case wasmtime.KindExternref:
			out[i] = 0x6f
		default:
			out[i] = 0x7b // v128, funcref: "unknown", as wazero names them
		}
	}
	return out
}

// errClosed is the error of a call after Close.
var errClosed = errors.New("engine: closed")

// acquire counts a call that uses the engine, and the guest it runs if
// intr is not nil; it reports false after Close.
func (e *wtEngine) acquire(intr *interrupter) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.refs++
	if intr != nil {
		e.running[intr] = struct{}{}
	}
	return true
}

// release ends what acquire began; the last one after Close frees the
// engine.
func (e *wtEngine) release(intr *interrupter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.running, intr)
	if e.refs--; e.refs == 0 && e.closed {
		e.free()
	}
}

// Close stops the guests running (those that can be interrupted, as
// wazero's Close does) and frees the engine once no call uses it.
func (e *wtEngine) Close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	for intr := range e.running {
		intr.interrupt(e.eng)
	}
	if e.refs == 0 {
		e.free()
	}
	return nil
}

// free closes the compiled modules, the linker and the engine.
func (e *wtEngine) free() {
	for k, c := range e.byHash {
		c.m.Close()
		delete(e.byHash, k)
	}
	if e.linker != nil {
		e.linker.Close()
	}
	e.eng.Close()
}

func (e *wtEngine) name() string { return Wasmtime }
