package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/skeinrun/skein/host/internal/engine"
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
		return nil, &ModuleError{Module: label, Reason: "not a WebAssembly module (no \\0asm header); build one from a Go workflow package with GOOS=wasip1 GOARCH=wasm go build -o NAME.wasm ./PKG"}
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
	mod, err := h.compileCode(ctx, label, wasm, timeout, engine.CompileOptions{Reusable: !shape.StateWrites, Shape: &shape})
	if err != nil {
		return nil, err
	}
	e := &cachedModule{hash: hash, mod: mod, size: moduleCost(shape.CodeBytes, mod.CodeBytes(), mod.ImageBytes())}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.cachedLocked(hash); old != nil { // cannot happen while h.compiling holds hash; kept safe
		e.close()
		return old, nil
	}
	h.insertLocked(e)
	return e, nil
}

// describe runs the module in describe mode and returns its registered
// workflows, sorted, and the input schemas it announced (nil for none).
func (h *Host) describe(ctx context.Context, label string, cm *cachedModule) ([]string, map[string]json.RawMessage, error) {
	x := newDescribeExec(h)
	err := h.instantiate(ctx, cm, x)
	if x.failure != nil {
		return nil, nil, &ModuleError{Module: label, Reason: x.failure.Error(), Err: x.failure}
	}
	if !x.described {
		reason := "it did not announce its workflows (does main call skein.Main?)"
		if err != nil {
			reason += ": " + exitDetail(err, x.stderr.String())
		}
		return nil, nil, &ModuleError{Module: label, Reason: reason, Err: err}
	}
	if len(x.workflows) == 0 {
		return nil, nil, &ModuleError{Module: label, Reason: "it registers no workflows (call skein.Register before skein.Main)"}
	}
	sort.Strings(x.workflows)
	return x.workflows, x.inputSchemas, nil
}
