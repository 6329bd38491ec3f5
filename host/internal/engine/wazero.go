package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// wazeroEngine is the Engine on wazero: one runtime holding WASI and
// the host module, shared by every instance.
type wazeroEngine struct {
	provided // the WASI and host functions, for the import check
	cfg      Config
	rt       wazero.Runtime
	cache    wazero.CompilationCache
	checks   bool // interrupts by the flag checks of interrupt.go
}

// NewWazero returns an Engine on wazero.
func NewWazero(ctx context.Context, cfg Config) (Engine, error) {
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir); err != nil {
			return nil, fmt.Errorf("compilation cache %s: %w", cfg.CacheDir, err)
		}
	} else {
		cache = wazero.NewCompilationCache()
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithMemoryLimitPages(cfg.MemoryLimitPages).
		WithCloseOnContextDone(cfg.Interruptible && cfg.WazeroCloseOnDone)
	e := &wazeroEngine{cfg: cfg, rt: wazero.NewRuntimeWithConfig(ctx, rc), cache: cache, checks: cfg.Interruptible && !cfg.WazeroCloseOnDone,
		provided: provided{hostModule: cfg.HostModule, host: map[string]FuncType{}}}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, e.rt); err != nil {
		_ = e.Close(ctx) // the instantiation's error is the one to return
		return nil, fmt.Errorf("wasi: %w", err)
	}
	e.wasi = funcTypes(e.rt.Module(wasi_snapshot_preview1.ModuleName).ExportedFunctionDefinitions())
	if err := e.exportHostModule(ctx); err != nil {
		_ = e.Close(ctx) // the export's error is the one to return
		return nil, fmt.Errorf("host module %s: %w", cfg.HostModule, err)
	}
	return e, nil
}

// instanceKey carries an instance's *stopped through Run's context to
// its host function calls.
type instanceKey struct{}

// stopped holds the error of the host function that stopped an instance;
// keep is set for an instance that is reset and reused after its run
// (wazero_recycle.go), which the stop must leave open.
type stopped struct {
	err  error
	keep bool
}

// exportHostModule instantiates the host module. A host function that
// returns an error ends its instance the way WASI's proc_exit does in
// wazero: it closes the module and unwinds the guest with a
// sys.ExitError, which InstantiateModule returns; Run then returns the
// host function's error, kept in the instance's context.
func (e *wazeroEngine) exportHostModule(ctx context.Context) error {
	b := e.rt.NewHostModuleBuilder(e.cfg.HostModule)
	for _, f := range e.cfg.HostFuncs {
		e.host[f.Name] = f.Type
		call := f.Call
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				err := call(ctx, memoryOf(mod), stack)
				if err == nil {
					return
				}
				s, ok := ctx.Value(instanceKey{}).(*stopped)
				if ok {
					s.err = err
				}
				if !ok || !s.keep {
					mod.CloseWithExitCode(ctx, 1)
				}
				panic(sys.NewExitError(1)) // wazero's way out of a host function (see above)
			}), valueTypes(f.Type.Params), valueTypes(f.Type.Results)).
			Export(f.Name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// funcTypes returns the signatures of defs.
func funcTypes(defs map[string]api.FunctionDefinition) map[string]FuncType {
	out := make(map[string]FuncType, len(defs))
	for name, d := range defs {
		out[name] = FuncType{Params: fromAPI(d.ParamTypes()), Results: fromAPI(d.ResultTypes())}
	}
	return out
}

func fromAPI(ts []api.ValueType) []ValueType {
	out := make([]ValueType, len(ts))
	for i, t := range ts {
		out[i] = ValueType(t)
	}
	return out
}

// checkImports checks cm's imports (imports.go).
func (e *wazeroEngine) checkImports(cm wazero.CompiledModule) error {
	var imports []importedFunc
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		imports = append(imports, importedFunc{module: mod, name: name, params: fromAPI(f.ParamTypes()), results: fromAPI(f.ResultTypes())})
	}
	fns := cm.ExportedFunctions()
	return e.provided.checkImports(imports, hasEntry(func(name string) bool { _, ok := fns[name]; return ok }))
}

func valueTypes(ts []ValueType) []api.ValueType {
	out := make([]api.ValueType, len(ts))
	for i, t := range ts {
		out[i] = api.ValueType(t)
	}
	return out
}

// memoryOf returns an instance's memory; one without memory has an
// empty one (every access out of bounds).
func memoryOf(mod api.Module) Memory {
	if m := mod.Memory(); m != nil {
		return m
	}
	return noMemory{}
}

type noMemory struct{}

func (noMemory) Read(uint32, uint32) ([]byte, bool) { return nil, false }
func (noMemory) Write(uint32, []byte) bool          { return false }

// wazeroModule is a module compiled by wazero, with the image of its
// initial memory (memimage_*.go) when it has one.
type wazeroModule struct {
	cm        wazero.CompiledModule
	img       *memImage
	codeBytes int
	reactor   bool          // exports _initialize and skein_main (reactor.go)
	snap      *snapshot     // the reactor's state after _initialize; nil: run it per instance
	pool      *instancePool // reset instances of a snapshotted reactor (wazero_recycle.go); nil: none
}

func (m *wazeroModule) CodeBytes() int { return m.codeBytes }

func (m *wazeroModule) Snapshotted() bool { return m.snap != nil }

func (m *wazeroModule) ImageBytes() int64 {
	if m.img == nil {
		return 0
	}
	return int64(m.img.size)
}

func (m *wazeroModule) Close(ctx context.Context) error {
	if m.pool != nil {
		m.pool.close(ctx)
	}
	err := m.cm.Close(ctx)
	if m.img != nil {
		m.img.close()
	}
	return err
}

// Compile compiles wasm. The module's initial memory becomes an image
// that instances map copy-on-write (memimage_linux.go); where that
// cannot be, its data segments are merged so that instantiation copies
// them in a few calls (wasmdata.go).
func (e *wazeroEngine) Compile(ctx context.Context, wasm []byte, o CompileOptions) (Module, error) {
	sections, shape := e.prepareReactor(wasm)
	code, img, unchecked, err := e.moduleCode(wasm, sections, o)
	if err != nil {
		return nil, err
	}
	m := &wazeroModule{img: img, codeBytes: len(code), reactor: shape.reactor}
	if o.Workers > 1 {
		ctx = experimental.WithCompilationWorkers(ctx, o.Workers)
	}
	cm, err := compileRecover(ctx, e.rt, code)
	if err != nil {
		if img != nil {
			img.close()
		}
		return nil, err
	}
	m.cm = cm
	if err := e.checkImports(cm); err != nil {
		_ = m.Close(context.WithoutCancel(ctx)) // the check's error is the one to return
		return nil, err
	}
	if unchecked != nil {
		_ = m.Close(context.WithoutCancel(ctx)) // the check's error is the one to return
		return nil, &InvalidError{Err: unchecked}
	}
	if m.reactor && img != nil && !e.cfg.NoSnapshots {
		if err := e.snapshot(ctx, m, shape); err != nil {
			_ = m.Close(context.WithoutCancel(ctx)) // the snapshot's error is the one to return
			return nil, err
		}
		if m.snap != nil && o.Reusable && !e.cfg.NoRecycling {
			m.pool = &instancePool{}
		}
	}
	return m, nil
}

// moduleCode returns the code to compile for wasm, whose sections are as
// prepareReactor left them: the data segments split off into img (see
// memImage) or, where that cannot be, merged, and the interrupt checks
// added when the engine has them; a module with an image is assembled
// once. unchecked is set when the module cannot have the checks (it has
// no memory): Compile refuses it after the import check.
func (e *wazeroEngine) moduleCode(wasm []byte, sections []wasmSection, o CompileOptions) (code []byte, img *memImage, unchecked, err error) {
	if !e.cfg.NoMemoryImages && sections != nil {
		if stripped, data, ok := stripData(sections); ok {
			if i, ierr := newMemImage(data); ierr == nil {
				sections, img = stripped, i
			}
		}
	}
	var checked []byte
	if img != nil {
		if !e.checks {
			return assemble(wasm, sections, -1, nil), img, nil, nil
		}
		checked, err = interruptChecked(wasm, sections, o.Shape)
	} else {
		code = wasm
		if sections != nil {
			code = assemble(wasm, sections, -1, nil)
		}
		code = mergeDataSegments(code)
		if !e.checks {
			return code, nil, nil, nil
		}
		checked, err = addInterruptChecks(code, o.Shape)
	}
	switch {
	case errors.Is(err, errNoMemory):
		if code == nil {
			code = assemble(wasm, sections, -1, nil)
		}
		return code, img, err, nil
	case err != nil:
		if img != nil {
			img.close()
		}
		return nil, nil, nil, &InvalidError{Err: err}
	}
	return checked, img, nil, nil
}

// compileRecover runs wazero's compiler, turning a panic in it (a module
// that trips a wazero bug) into an *InvalidError carrying the stack.
func compileRecover(ctx context.Context, rt wazero.Runtime, code []byte) (cm wazero.CompiledModule, err error) {
	defer func() {
		if p := recover(); p != nil {
			cm, err = nil, &InvalidError{Err: fmt.Errorf("the compiler failed on it: %v", p), Stack: string(debug.Stack())}
		}
	}()
	cm, err = rt.CompileModule(ctx, code)
	if err != nil && ctx.Err() == nil {
		err = &InvalidError{Err: err}
	}
	return cm, err
}

// Run instantiates m and runs it to its end.
func (e *wazeroEngine) Run(ctx context.Context, m Module, c RunConfig) error {
	wm, ok := m.(*wazeroModule)
	if !ok {
		return fmt.Errorf("engine: module %T was not compiled by wazero", m)
	}
	s := &stopped{}
	ctx = withMemory(context.WithValue(ctx, instanceKey{}, s), wm.img, e.cfg.SliceMemory)
	var mod api.Module
	var err error
	if wm.pool != nil {
		err = e.runRecycled(ctx, wm, c, s)
	} else if wm.reactor {
		mod, err = e.runReactor(ctx, wm, moduleConfig(c))
	} else {
		mod, err = e.instantiate(ctx, wm.cm, moduleConfig(c), "_start")
	}
	if mod != nil {
		mod.Close(ctx)
	}
	if s.err != nil {
		return s.err
	}
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		return &ExitError{Code: ee.ExitCode()}
	}
	return err
}

// moduleConfig is the configuration of an instance that sees c.
func moduleConfig(c RunConfig) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithArgs(c.Args...).
		WithStdout(c.Stdout).
		WithStderr(c.Stderr).
		WithWalltime(c.Walltime, 1).
		WithNanotime(c.Nanotime, 1).
		WithNanosleep(c.Nanosleep).
		WithOsyield(func() {}).
		WithRandSource(c.Rand)
}

// Close closes the runtime and its compilation cache.
func (e *wazeroEngine) Close(ctx context.Context) error {
	err := e.rt.Close(ctx)
	if cerr := e.cache.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// wasiTypes returns the signatures of the WASI functions wazero
// provides: the set every engine gives guests, so that a module passes
// the import check on one engine exactly when it passes it on the other.
//
//lint:ignore U1000 used by the wasmtime engine (wasmtime.go, -tags wasmtime)
func wasiTypes(ctx context.Context) (map[string]FuncType, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, fmt.Errorf("wasi: %w", err)
	}
	return funcTypes(rt.Module(wasi_snapshot_preview1.ModuleName).ExportedFunctionDefinitions()), nil
}

func (e *wazeroEngine) name() string { return Wazero }
