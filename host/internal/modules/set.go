// Package modules holds a host's compiled modules: the compilations
// (bounded in number, shared between callers of the same module, stopped
// past a deadline), the structure limits checked before the compiler
// sees a module, and a cache of compiled modules bounded by their
// estimated memory, with its own lock.
package modules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/limit"
	"github.com/skeinrun/skein/host/internal/wasmlimits"
	"github.com/skeinrun/skein/store"
)

// Config configures a Set; the fields are the host's (host.Config).
type Config struct {
	Engine engine.Engine
	Store  store.Store // where Compiled and Info read modules
	Log    *slog.Logger
	// MaxCompiledBytes bounds the cache (negative: no bound).
	MaxCompiledBytes int64
	// MaxConcurrentCompiles bounds the compilations running at once.
	MaxConcurrentCompiles int
	// Structure are the limits checked before a module is compiled.
	Structure wasmlimits.Limits
	// MaxRunWithoutYield is the bound of a command module's start-up (0:
	// none), for the error of a start-up that passed it.
	MaxRunWithoutYield time.Duration
	Hints              limit.Hints
}

// Set is the compiled modules of a host. It is safe for concurrent use.
type Set struct {
	cfg   Config
	slots chan struct{}  // Config.MaxConcurrentCompiles (compile.go)
	runs  sync.WaitGroup // compilations running, stopped or not

	mu        sync.Mutex
	cache     cache                    // compiled modules (cache.go)
	compiling map[string]chan struct{} // compilations in progress, by module hash
	infos     map[string]store.Module  // by module hash, without bytes
}

// New returns an empty set.
func New(cfg Config) *Set {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Set{cfg: cfg, slots: make(chan struct{}, max(cfg.MaxConcurrentCompiles, 1)),
		cache: cache{byHash: map[string]*Module{}}, compiling: map[string]chan struct{}{}, infos: map[string]store.Module{}}
}

// Compiled returns the compiled module of a stored module, with a
// reference the caller gives back with Release: from the host's cache
// without touching the store (the cache is keyed by the same sha256 as
// the store), else loaded from the store and compiled (with no deadline:
// the module passed its checks when it was deployed).
func (s *Set) Compiled(ctx context.Context, hash string) (*Module, error) {
	s.mu.Lock()
	e := s.cachedLocked(hash)
	s.mu.Unlock()
	if e != nil {
		return e, nil
	}
	m, err := s.cfg.Store.Module(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", hash[:min(12, len(hash))], err)
	}
	e, _, err = s.Compile(ctx, m.Name, m.Bytes, 0)
	return e, err
}

// Info returns a stored module without its bytes. A hash is served
// from the host's cache after the first lookup (a module never changes
// under its hash); a name always asks the store, since it may point at a
// newer module.
func (s *Set) Info(ctx context.Context, hashOrName string) (store.Module, error) {
	s.mu.Lock()
	m, ok := s.infos[hashOrName]
	s.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := s.cfg.Store.ModuleInfo(ctx, hashOrName)
	if err != nil {
		return store.Module{}, err
	}
	s.mu.Lock()
	s.infos[m.Hash] = m
	s.mu.Unlock()
	return m, nil
}

// Compile compiles wasm (cached by hash) and checks its structure and
// imports; it returns the cache entry with a reference the caller gives
// back with Release. Calls for the same module share one compilation:
// after a restart, every run of a module needs it at once. timeout, if
// positive, bounds the compilation (Config.CompileTimeout).
func (s *Set) Compile(ctx context.Context, label string, wasm []byte, timeout time.Duration) (*Module, string, error) {
	sum := sha256.Sum256(wasm)
	hash := hex.EncodeToString(sum[:])
	for {
		s.mu.Lock()
		if e := s.cachedLocked(hash); e != nil {
			s.mu.Unlock()
			return e, hash, nil
		}
		wait, busy := s.compiling[hash]
		if !busy {
			done := make(chan struct{})
			s.compiling[hash] = done
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				delete(s.compiling, hash)
				s.mu.Unlock()
				close(done)
			}()
			e, err := s.compileNew(ctx, label, hash, wasm, timeout)
			return e, hash, err
		}
		s.mu.Unlock()
		select {
		case <-wait: // compiled, or failed: look again (and compile if it failed)
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
	}
}

// compileNew compiles a module that is not in the cache and caches it.
func (s *Set) compileNew(ctx context.Context, label, hash string, wasm []byte, timeout time.Duration) (*Module, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, &Error{Module: label, Reason: "not a WebAssembly module (no \\0asm header); build one from a Go workflow package with GOOS=wasip1 GOARCH=wasm go build -o NAME.wasm ./PKG"}
	}
	if v := wasm[4:8]; v[0] != 1 || v[1] != 0 || v[2] != 0 || v[3] != 0 {
		return nil, &Error{Module: label, Reason: fmt.Sprintf("unsupported WebAssembly binary version %v (want 1)", v)}
	}
	// Measured before wazero sees it: a module over a structure limit
	// could keep the compiler busy for hours (package wasmlimits).
	shape, err := wasmlimits.Check(wasm, s.cfg.Structure)
	if err != nil {
		return nil, s.structureError(label, err)
	}
	mod, err := s.compileCode(ctx, label, wasm, timeout, engine.CompileOptions{Reusable: !shape.StateWrites, Shape: &shape})
	if err != nil {
		return nil, err
	}
	e := &Module{hash: hash, mod: mod, size: moduleCost(shape.CodeBytes, mod.CodeBytes(), mod.ImageBytes())}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.cachedLocked(hash); old != nil { // cannot happen while s.compiling holds hash; kept safe
		e.close()
		return old, nil
	}
	s.insertLocked(e)
	return e, nil
}
