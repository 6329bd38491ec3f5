package modules

import (
	"container/list"
	"context"
	"sync/atomic"

	"github.com/skeinrun/skein/host/internal/engine"
)

// Module is a compiled module in the set's cache. Executions
// hold a reference while they use it: an entry evicted or discarded
// while in use is closed when its last user releases it, never under a
// running instance (a closed module cannot be instantiated).
type Module struct {
	hash string
	mod  engine.Module
	size int64 // estimated bytes it keeps in memory (see moduleCost)
	refs int   // users (guarded by Set.mu)
	elem *list.Element
	// cached: in the set's cache (the entry is in the map and the LRU list).
	cached bool
}

// cache bounds the compiled modules a set keeps by their estimated size,
// evicting the least recently used ones that no execution uses
// (Config.MaxCompiledBytes). Guarded by Set.mu.
type cache struct {
	byHash    map[string]*Module
	lru       list.List // of *Module, most recently used first
	bytes     int64     // sum of the sizes of the cached entries
	evictions uint64    // entries evicted to stay within the bound
	discarded uint64    // entries dropped because their module was rejected
	compiles  uint64    // compilations that succeeded
	// Compilations holding a slot (Config.MaxConcurrentCompiles) and
	// waiting for one; atomic, not guarded by Set.mu.
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
func (s *Set) cachedLocked(hash string) *Module {
	e, ok := s.cache.byHash[hash]
	if !ok {
		return nil
	}
	e.refs++
	s.cache.lru.MoveToFront(e.elem)
	return e
}

// insertLocked caches a new entry (with a reference taken for the
// caller) and evicts what the bound requires.
func (s *Set) insertLocked(e *Module) {
	e.refs++
	e.cached = true
	e.elem = s.cache.lru.PushFront(e)
	s.cache.byHash[e.hash] = e
	s.cache.bytes += e.size
	s.cache.compiles++
	s.evictLocked()
}

// evictLocked drops least recently used entries no execution uses until
// the cache is within Config.MaxCompiledBytes. Entries in use stay (the
// cache can go over the bound while every entry is in use).
func (s *Set) evictLocked() {
	limit := s.cfg.MaxCompiledBytes
	if limit < 0 {
		return
	}
	for el := s.cache.lru.Back(); el != nil && s.cache.bytes > limit; {
		e := el.Value.(*Module)
		el = el.Prev()
		if e.refs > 0 {
			continue
		}
		s.uncacheLocked(e)
		s.cache.evictions++
		e.close()
	}
}

// uncacheLocked removes an entry from the cache without closing it.
func (s *Set) uncacheLocked(e *Module) {
	if !e.cached {
		return
	}
	e.cached = false
	s.cache.lru.Remove(e.elem)
	e.elem = nil
	delete(s.cache.byHash, e.hash)
	s.cache.bytes -= e.size
}

// Release gives back a reference taken by Compile or Compiled. The
// last user of an entry that left the cache closes it.
func (s *Set) Release(e *Module) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if !e.cached {
		e.close()
		return
	}
	s.evictLocked()
}

// Discard drops the entry of a rejected module from the cache and
// releases the caller's reference: it is closed once no one uses it.
func (s *Set) Discard(e *Module) {
	s.mu.Lock()
	if e.cached {
		s.uncacheLocked(e)
		s.cache.discarded++
	}
	s.mu.Unlock()
	s.Release(e)
}

// close frees the compiled code and the memory image.
func (e *Module) close() {
	_ = e.mod.Close(context.Background()) // it frees memory: both engines' Close return nil
}

// CloseAll closes every cached entry not in use (Host.Close).
func (s *Set) CloseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.cache.byHash {
		s.uncacheLocked(e)
		if e.refs == 0 {
			e.close()
		}
	}
}

// Stats are the set's figures, for metrics.
type Stats struct {
	Entries                        int
	Bytes                          int64
	Evictions, Discarded, Compiles uint64
	Running, Waiting               int64 // compilations holding a slot, and waiting for one
}

// Stats returns the set's figures now.
func (s *Set) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &s.cache
	return Stats{Entries: len(c.byHash), Bytes: c.bytes, Evictions: c.evictions, Discarded: c.discarded, Compiles: c.compiles,
		Running: c.running.Load(), Waiting: c.waiting.Load()}
}

// Cached reports whether the module of hash is in the cache.
func (s *Set) Cached(hash string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.cache.byHash[hash]
	return ok
}

// Engine returns the engine's compiled module, to instantiate.
func (e *Module) Engine() engine.Module { return e.mod }

// Hash is the module's sha256, in hex.
func (e *Module) Hash() string { return e.hash }
