package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/wasmlimits"
	"github.com/skeinrun/skein/store"
)

// ModuleError reports a module that skein cannot run: not wasm, not a
// skein module, a wrong ABI version, imports skein does not provide.
type ModuleError struct {
	Module string // name or file the caller gave
	Reason string
	Err    error
}

func (e *ModuleError) Error() string {
	if e.Module == "" {
		return "module rejected: " + e.Reason
	}
	return fmt.Sprintf("module %s rejected: %s", e.Module, e.Reason)
}

func (e *ModuleError) Unwrap() error { return e.Err }

// hostSigs lists every ABI v1 host function with its wasm signature.
var hostSigs = map[string][2][]api.ValueType{
	abi.FnHello:      {{i32}, {i32}},
	abi.FnWorkflows:  {{i32, i32}, nil},
	abi.FnInvocation: {{i32, i32}, {i32}},
	abi.FnTake:       {{i32, i32}, {i32}},
	abi.FnNext:       {{i32, i32}, {i32}},
	abi.FnOp:         {{i32, i32, i32, i32, i32, i32, i32, i32, i32, i32}, {i32}},
	abi.FnStepDone:   {{i32, i32, i32, i32, i32}, {i32}},
	abi.FnAwait:      {{i32, i32, i32, i32}, {i32}},
	abi.FnSelect:     {{i32, i32, i32, i32, i32}, {i32}},
	abi.FnTaskDone:   {{i32, i32, i32, i32}, nil},
	abi.FnBodySleep:  {{i32, i64}, nil},
	abi.FnRealNow:    {nil, {i64}},
	abi.FnRealRand:   {{i32, i32}, nil},
	abi.FnOutcomes:   {{i32, i32}, {i32}},
	abi.FnOpOptions:  {{i32, i32, i32}, nil},
	abi.FnCanceled:   {{i32, i32}, {i32}},
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// compiledModule returns the compiled module of a stored module, with a
// reference the caller gives back with h.release: from the host's cache
// without touching the store (the cache is keyed by the same sha256 as
// the store), else loaded from the store and compiled (with no deadline:
// the module passed its checks when it was deployed).
func (h *Host) compiledModule(ctx context.Context, hash string) (*cachedModule, error) {
	h.mu.Lock()
	e := h.cachedLocked(hash)
	h.mu.Unlock()
	if e != nil {
		return e, nil
	}
	m, err := h.cfg.Store.Module(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", shortHash(hash), err)
	}
	e, _, err = h.compile(ctx, m.Name, m.Bytes, 0)
	return e, err
}

// moduleInfo returns a stored module without its bytes. A hash is served
// from the host's cache after the first lookup (a module never changes
// under its hash); a name always asks the store, since it may point at a
// newer module.
func (h *Host) moduleInfo(ctx context.Context, hashOrName string) (store.Module, error) {
	h.mu.Lock()
	m, ok := h.infos[hashOrName]
	h.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := h.cfg.Store.ModuleInfo(ctx, hashOrName)
	if err != nil {
		return store.Module{}, err
	}
	h.mu.Lock()
	h.infos[m.Hash] = m
	h.mu.Unlock()
	return m, nil
}

// compile compiles wasm (cached by hash) and checks its structure and
// imports; it returns the cache entry with a reference the caller gives
// back with h.release. Calls for the same module share one compilation:
// after a restart, every run of a module needs it at once. timeout, if
// positive, bounds the compilation (Config.CompileTimeout).
func (h *Host) compile(ctx context.Context, label string, wasm []byte, timeout time.Duration) (*cachedModule, string, error) {
	sum := sha256.Sum256(wasm)
	hash := hex.EncodeToString(sum[:])
	for {
		h.mu.Lock()
		if e := h.cachedLocked(hash); e != nil {
			h.mu.Unlock()
			return e, hash, nil
		}
		wait, busy := h.compiling[hash]
		if !busy {
			done := make(chan struct{})
			h.compiling[hash] = done
			h.mu.Unlock()
			defer func() {
				h.mu.Lock()
				delete(h.compiling, hash)
				h.mu.Unlock()
				close(done)
			}()
			e, err := h.compileNew(ctx, label, hash, wasm, timeout)
			return e, hash, err
		}
		h.mu.Unlock()
		select {
		case <-wait: // compiled, or failed: look again (and compile if it failed)
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
	}
}

// compileNew compiles a module that is not in the cache and caches it.
func (h *Host) compileNew(ctx context.Context, label, hash string, wasm []byte, timeout time.Duration) (*cachedModule, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, &ModuleError{Module: label, Reason: "not a WebAssembly module (no \\0asm header)"}
	}
	if v := wasm[4:8]; v[0] != 1 || v[1] != 0 || v[2] != 0 || v[3] != 0 {
		return nil, &ModuleError{Module: label, Reason: fmt.Sprintf("unsupported WebAssembly binary version %v (want 1)", v)}
	}
	// Measured before wazero sees it: a module over a structure limit
	// could keep the compiler busy for hours (modlimits.go).
	shape, err := wasmlimits.Check(wasm, h.cfg.structureLimits())
	if err != nil {
		return nil, h.structureError(label, err)
	}
	// The module's initial memory becomes an image that instances map
	// copy-on-write (memimage_linux.go); where that cannot be, its data
	// segments are merged so instantiation copies them in a few calls.
	var code []byte
	var img *memImage
	if useMemImages {
		if stripped, data, ok := splitData(wasm); ok {
			if i, err := newMemImage(data); err == nil {
				code, img = stripped, i
			}
		}
	}
	if code == nil {
		code = mergeDataSegments(wasm)
	}
	cm, err := h.compileCode(ctx, label, code, timeout)
	if err == nil {
		if err = checkImports(cm); err == nil {
			err = h.checkWASI(cm) // validate.go
		}
		if err != nil {
			cm.Close(ctx)
			err = &ModuleError{Module: label, Reason: err.Error()}
		}
	}
	if err != nil {
		if img != nil {
			img.close()
		}
		return nil, err
	}
	e := &cachedModule{hash: hash, cm: cm, img: img, size: moduleCost(shape.CodeBytes, len(code), img)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.cachedLocked(hash); old != nil { // cannot happen while h.compiling holds hash; kept safe
		e.close()
		return old, nil
	}
	h.insertLocked(e)
	return e, nil
}

// useMemImages turns copy-on-write memory images on (benchmarks compare).
var useMemImages = os.Getenv("SKEIN_NO_MEM_IMAGES") == ""

func checkImports(cm wazero.CompiledModule) error {
	skeinImports := 0
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case wasi_snapshot_preview1.ModuleName:
			continue
		case abi.Module:
			sig, ok := hostSigs[name]
			if !ok {
				return fmt.Errorf("it imports %s.%s, which skein ABI v%d does not provide (a module built for a newer skein?)", mod, name, abi.Version)
			}
			if !sameTypes(f.ParamTypes(), sig[0]) || !sameTypes(f.ResultTypes(), sig[1]) {
				return fmt.Errorf("it imports %s.%s with signature %s -> %s; skein ABI v%d defines %s -> %s",
					mod, name, typeNames(f.ParamTypes()), typeNames(f.ResultTypes()), abi.Version, typeNames(sig[0]), typeNames(sig[1]))
			}
			skeinImports++
		default:
			return fmt.Errorf("it imports %s.%s; skein provides only the modules %q (ABI v%d) and %q", mod, name, abi.Module, abi.Version, wasi_snapshot_preview1.ModuleName)
		}
	}
	if skeinImports == 0 {
		return fmt.Errorf("not a skein module: it imports nothing from module %q (build it with GOOS=wasip1 GOARCH=wasm against github.com/skeinrun/skein/guest-sdk/skein)", abi.Module)
	}
	if _, ok := cm.ExportedFunctions()["_start"]; !ok {
		return errors.New("not a skein module: it exports no _start function (build a main package, a WASI command)")
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func typeNames(ts []api.ValueType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = api.ValueTypeName(t)
	}
	return "(" + strings.Join(names, ",") + ")"
}

// describe runs the module in describe mode and returns its registered
// workflows, sorted.
func (h *Host) describe(ctx context.Context, label string, cm *cachedModule) ([]string, error) {
	x := newDescribeExec(h)
	err := h.instantiate(ctx, cm, x)
	if x.failure != nil {
		return nil, &ModuleError{Module: label, Reason: x.failure.Error(), Err: x.failure}
	}
	if !x.described {
		reason := "it did not announce its workflows (does main call skein.Main?)"
		if err != nil {
			reason += ": " + exitDetail(err, x.stderr.String())
		}
		return nil, &ModuleError{Module: label, Reason: reason, Err: err}
	}
	if len(x.workflows) == 0 {
		return nil, &ModuleError{Module: label, Reason: "it registers no workflows (call skein.Register before skein.Main)"}
	}
	sort.Strings(x.workflows)
	return x.workflows, nil
}
