package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// Search attributes (store.AttrStore): the declarations by name, and each
// run's values in its runRec (deleted with the run).

// CreateAttr declares an attribute (see store.AttrStore).
func (s *Store) CreateAttr(ctx context.Context, d store.AttrDecl) (store.AttrDecl, error) {
	if err := store.CheckAttrDecl(d); err != nil {
		return store.AttrDecl{}, fmt.Errorf("memory store: create attribute: %w", err)
	}
	d.CreatedAt = time.Unix(0, orNow(d.CreatedAt, time.Now()).UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.AttrDecl{}, fmt.Errorf("memory store: create attribute %q: %w", d.Name, err)
	}
	if _, ok := s.decls[d.Name]; ok {
		return store.AttrDecl{}, fmt.Errorf("memory store: create attribute %q: the name is taken: %w", d.Name, store.ErrConflict)
	}
	n := 0
	for name := range s.decls {
		if store.NamespaceOf(name) == store.NamespaceOf(d.Name) {
			n++
		}
	}
	if n >= store.MaxAttrDecls {
		return store.AttrDecl{}, fmt.Errorf("memory store: create attribute %q: %w (limit %d)", d.Name, store.ErrAttrLimit, store.MaxAttrDecls)
	}
	if s.decls == nil {
		s.decls = map[string]store.AttrDecl{}
	}
	s.decls[d.Name] = d
	return d, nil
}

// Attrs lists the declarations by name.
func (s *Store) Attrs(ctx context.Context) ([]store.AttrDecl, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: list attributes: %w", err)
	}
	return s.declList(), nil
}

// declList is the declarations by name. The caller holds mu.
func (s *Store) declList() []store.AttrDecl {
	ds := slices.Collect(maps.Values(s.decls))
	slices.SortFunc(ds, func(a, b store.AttrDecl) int { return strings.Compare(a.Name, b.Name) })
	return ds
}

// DeleteAttr deletes a declaration and every run's value of it.
func (s *Store) DeleteAttr(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory store: delete attribute %q: %w", name, err)
	}
	if _, ok := s.decls[name]; !ok {
		return fmt.Errorf("memory store: delete attribute %q: %w", name, store.ErrNotFound)
	}
	delete(s.decls, name)
	for _, rec := range s.runs {
		delete(rec.attrs, name)
	}
	return nil
}

// RunAttrs returns the values of the runs ids.
func (s *Store) RunAttrs(ctx context.Context, ids []string) (map[string]map[string]any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: run attributes: %w", err)
	}
	out := map[string]map[string]any{}
	for _, id := range ids {
		if rec := s.runs[id]; rec != nil && len(rec.attrs) > 0 {
			out[id] = maps.Clone(rec.attrs)
		}
	}
	return out, nil
}

// setAttrs writes values over the run's (the newest wins). A time is
// kept as its instant in the local zone, as the SQL backends read it.
func (r *runRec) setAttrs(vs map[string]any) {
	if len(vs) == 0 {
		return
	}
	if r.attrs == nil {
		r.attrs = make(map[string]any, len(vs))
	}
	for k, v := range vs {
		if t, ok := v.(time.Time); ok {
			v = time.Unix(0, t.UnixNano())
		}
		r.attrs[k] = v
	}
}
