package host

import (
	"bufio"
	"container/list"
	"context"
	"fmt"
	"sync/atomic"

	"github.com/skeinrun/skein/host/internal/engine"
)

// cachedModule is a compiled module in the host's cache. Executions
// hold a reference while they use it: an entry evicted or discarded
// while in use is closed when its last user releases it, never under a
// running instance (a closed module cannot be instantiated).
type cachedModule struct {
	hash string
	mod  engine.Module
	size int64 // estimated bytes it keeps in memory (see moduleCost)
	refs int   // users (guarded by Host.mu)
	elem *list.Element
	// cached: in Host.modules (the entry is in the map and the LRU list).
	cached bool
}

// moduleCache bounds the compiled modules a host keeps by their
// estimated size, evicting the least recently used ones that no
// execution uses (Config.MaxCompiledBytes). Guarded by Host.mu.
type moduleCache struct {
	byHash    map[string]*cachedModule
	lru       list.List // of *cachedModule, most recently used first
	bytes     int64     // sum of the sizes of the cached entries
	evictions uint64    // entries evicted to stay within the bound
	discarded uint64    // entries dropped because their module was rejected
	compiles  uint64    // compilations that succeeded
	// Compilations holding a slot (Config.MaxConcurrentCompiles) and
	// waiting for one; atomic, not guarded by Host.mu.
	running, waiting atomic.Int64
}

// moduleCost estimates the memory a compiled module keeps: wazero's
// machine code is about 6 bytes per byte of the code section and its
// decoded module about twice the module's size (measured on Go guests:
// docs/limits.md), plus the memory image, held twice (in the Go heap and
// in its memfd).
func moduleCost(codeBytes, moduleBytes int, imageBytes int64) int64 {
	return 6*int64(codeBytes) + 2*int64(moduleBytes) + 2*imageBytes
}

// cachedLocked returns the cached entry of hash with a reference taken.
func (h *Host) cachedLocked(hash string) *cachedModule {
	e, ok := h.modules.byHash[hash]
	if !ok {
		return nil
	}
	e.refs++
	h.modules.lru.MoveToFront(e.elem)
	return e
}

// insertLocked caches a new entry (with a reference taken for the
// caller) and evicts what the bound requires.
func (h *Host) insertLocked(e *cachedModule) {
	e.refs++
	e.cached = true
	e.elem = h.modules.lru.PushFront(e)
	h.modules.byHash[e.hash] = e
	h.modules.bytes += e.size
	h.modules.compiles++
	h.evictLocked()
}

// evictLocked drops least recently used entries no execution uses until
// the cache is within Config.MaxCompiledBytes. Entries in use stay (the
// cache can go over the bound while every entry is in use).
func (h *Host) evictLocked() {
	limit := h.cfg.MaxCompiledBytes
	if limit < 0 {
		return
	}
	for el := h.modules.lru.Back(); el != nil && h.modules.bytes > limit; {
		e := el.Value.(*cachedModule)
		el = el.Prev()
		if e.refs > 0 {
			continue
		}
		h.uncacheLocked(e)
		h.modules.evictions++
		e.close()
	}
}

// uncacheLocked removes an entry from the cache without closing it.
func (h *Host) uncacheLocked(e *cachedModule) {
	if !e.cached {
		return
	}
	e.cached = false
	h.modules.lru.Remove(e.elem)
	e.elem = nil
	delete(h.modules.byHash, e.hash)
	h.modules.bytes -= e.size
}

// release gives back a reference taken by compile or loadModule. The
// last user of an entry that left the cache closes it.
func (h *Host) release(e *cachedModule) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if !e.cached {
		e.close()
		return
	}
	h.evictLocked()
}

// discard drops the entry of a rejected module from the cache and
// releases the caller's reference: it is closed once no one uses it.
func (h *Host) discard(e *cachedModule) {
	h.mu.Lock()
	if e.cached {
		h.uncacheLocked(e)
		h.modules.discarded++
	}
	h.mu.Unlock()
	h.release(e)
}

// close frees the compiled code and the memory image.
func (e *cachedModule) close() {
	e.mod.Close(context.Background())
}

// closeAll closes every cached entry (Host.Close).
func (h *Host) closeAllModules() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.modules.byHash {
		h.uncacheLocked(e)
		if e.refs == 0 {
			e.close()
		}
	}
}

// writeModuleMetrics writes the compiled-module cache's metrics.
func (h *Host) writeModuleMetrics(bw *bufio.Writer, head func(name, typ, help string)) {
	h.mu.Lock()
	c := &h.modules
	entries, bytes, evictions, discarded, compiles := len(c.byHash), c.bytes, c.evictions, c.discarded, c.compiles
	h.mu.Unlock()
	head("skein_compiled_modules", "gauge", "Compiled modules in the host's cache.")
	fmt.Fprintf(bw, "skein_compiled_modules %d\n", entries)
	head("skein_compiled_module_bytes", "gauge", "Estimated memory of the compiled modules in the cache (machine code, decoded module, memory image).")
	fmt.Fprintf(bw, "skein_compiled_module_bytes %d\n", bytes)
	head("skein_compiled_module_bytes_limit", "gauge", "The cache's bound, Config.MaxCompiledBytes (--max-compiled-bytes); -1: none.")
	fmt.Fprintf(bw, "skein_compiled_module_bytes_limit %d\n", max(h.cfg.MaxCompiledBytes, -1))
	head("skein_compiled_module_evictions_total", "counter", "Compiled modules evicted from the cache to stay within its bound.")
	fmt.Fprintf(bw, "skein_compiled_module_evictions_total %d\n", evictions)
	head("skein_compiled_module_discards_total", "counter", "Compiled modules dropped because the module was rejected after compiling (at the describe step or when storing it).")
	fmt.Fprintf(bw, "skein_compiled_module_discards_total %d\n", discarded)
	head("skein_module_compiles_running", "gauge", "Compilations holding one of the --max-concurrent-compiles slots (stopped ones too, until they end).")
	fmt.Fprintf(bw, "skein_module_compiles_running %d\n", h.modules.running.Load())
	head("skein_module_compiles_waiting", "gauge", "Compilations waiting for a slot.")
	fmt.Fprintf(bw, "skein_module_compiles_waiting %d\n", h.modules.waiting.Load())
	head("skein_module_compiles_total", "counter", "Compilations of modules that succeeded (a cache miss compiles, or loads from the disk cache of --cache-dir).")
	fmt.Fprintf(bw, "skein_module_compiles_total %d\n", compiles)
}
