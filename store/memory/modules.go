package memory

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/skeinrun/skein/store"
)

// PutModule stores m. Storing a hash again keeps the first record; a
// non-empty m.Name is pointed at m.Hash (moved from the module it named)
// and every other name is left as it is. A zero m.CreatedAt is set to
// now.
func (s *Store) PutModule(ctx context.Context, m store.Module) error {
	if m.Hash == "" {
		return errors.New("memory store: put module: empty hash")
	}
	if err := m.CheckTexts(); err != nil {
		return fmt.Errorf("memory store: put module: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory store: put module %s: %w", m.Hash, err)
	}
	name, owner, rec := m.Name, m.Owner(), s.modules[m.Hash]
	if rec == nil {
		m.Bytes = bytes.Clone(m.Bytes)
		m.Workflows = slices.Clone(m.Workflows)
		if len(m.Workflows) == 0 {
			m.Workflows = nil
		}
		m.InputSchemas = maps.Clone(m.InputSchemas)
		if len(m.InputSchemas) == 0 {
			m.InputSchemas = nil
		}
		m.CreatedAt = orNow(m.CreatedAt, time.Now())
		m.Name, m.Names, m.DeployedNames, m.Namespace = "", nil, nil, ""
		rec = &moduleRec{m: m, order: len(s.modules), names: map[string]int64{}, owners: map[string]bool{}}
		s.modules[m.Hash] = rec
	}
	rec.owners[owner] = true
	if name != "" {
		s.names[name] = m.Hash
		s.namedSeq++
		rec.names[name] = s.namedSeq
	}
	return nil
}

// Module returns the module whose hash is hashOrName or, failing that, the
// module the name hashOrName points at. It fails with store.ErrNotFound
// (wrapped) if neither exists.
func (s *Store) Module(ctx context.Context, hashOrName string) (store.Module, error) {
	return s.module(ctx, hashOrName, true)
}

// ModuleInfo returns a module by hash or name, without its bytes.
func (s *Store) ModuleInfo(ctx context.Context, hashOrName string) (store.Module, error) {
	return s.module(ctx, hashOrName, false)
}

func (s *Store) module(ctx context.Context, hashOrName string, withBytes bool) (store.Module, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return store.Module{}, fmt.Errorf("memory store: module %q: %w", hashOrName, err)
	}
	rec := s.modules[hashOrName]
	if rec == nil && hashOrName != "" {
		rec = s.modules[s.names[hashOrName]]
	}
	if rec == nil {
		return store.Module{}, fmt.Errorf("memory store: module %q: %w", hashOrName, store.ErrNotFound)
	}
	return s.copyModule(rec, withBytes), nil
}

// Modules lists every module without its bytes, most recently created
// first (the most recently stored first among equal CreatedAt).
func (s *Store) Modules(ctx context.Context) ([]store.Module, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: list modules: %w", err)
	}
	recs := make([]*moduleRec, 0, len(s.modules))
	for _, r := range s.modules {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b *moduleRec) int {
		return cmp.Or(b.m.CreatedAt.Compare(a.m.CreatedAt), cmp.Compare(b.order, a.order))
	})
	var ms []store.Module
	for _, r := range recs {
		ms = append(ms, s.copyModule(r, false))
	}
	return ms, nil
}

// copyModule returns rec's module with its own copy of Workflows, its
// names, and a copy of its Bytes when withBytes is set (nil otherwise).
// The caller holds mu.
func (s *Store) copyModule(rec *moduleRec, withBytes bool) store.Module {
	m := rec.m
	var newest int64
	for name, seq := range rec.names {
		m.DeployedNames = append(m.DeployedNames, name)
		if s.names[name] != m.Hash {
			continue // moved to another module
		}
		m.Names = append(m.Names, name)
		if seq > newest {
			m.Name, newest = name, seq
		}
	}
	slices.Sort(m.Names)
	slices.Sort(m.DeployedNames)
	m.Namespaces = slices.Sorted(maps.Keys(rec.owners))
	m.Size = int64(len(m.Bytes))
	if withBytes {
		m.Bytes = bytes.Clone(m.Bytes)
	} else {
		m.Bytes = nil
	}
	m.Workflows = slices.Clone(m.Workflows)
	m.InputSchemas = maps.Clone(m.InputSchemas)
	return m
}
