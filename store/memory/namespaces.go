package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// Namespace records (store.NamespaceStore).

// defaultNamespaces is the namespaces of a new store: DefaultNamespace,
// created at now.
func defaultNamespaces(now time.Time) map[string]store.Namespace {
	n := store.Namespace{Name: store.DefaultNamespace, Retention: store.RetentionDefault, Weight: store.DefaultNamespaceWeight}
	return map[string]store.Namespace{n.Name: n.ForCreate(now)}
}

// CreateNamespace stores a new namespace.
func (s *Store) CreateNamespace(ctx context.Context, n store.Namespace) (store.Namespace, error) {
	if err := n.Check(); err != nil {
		return store.Namespace{}, fmt.Errorf("memory store: create namespace: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Namespace{}, err
	}
	if _, ok := s.nss[n.Name]; ok {
		return store.Namespace{}, fmt.Errorf("memory store: namespace %q exists: %w", n.Name, store.ErrConflict)
	}
	n = n.ForCreate(time.Now())
	s.nss[n.Name] = n
	return n, nil
}

// Namespace returns one namespace.
func (s *Store) Namespace(ctx context.Context, name string) (store.Namespace, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return store.Namespace{}, err
	}
	n, ok := s.nss[name]
	if !ok {
		return store.Namespace{}, fmt.Errorf("memory store: namespace %q: %w", name, store.ErrNotFound)
	}
	return n, nil
}

// Namespaces lists every namespace by name.
func (s *Store) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	out := make([]store.Namespace, 0, len(s.nss))
	for _, n := range s.nss {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b store.Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateNamespace replaces a namespace's description, retention and
// weight.
func (s *Store) UpdateNamespace(ctx context.Context, n store.Namespace) (store.Namespace, error) {
	if err := n.Check(); err != nil {
		return store.Namespace{}, fmt.Errorf("memory store: update namespace: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Namespace{}, err
	}
	old, ok := s.nss[n.Name]
	if !ok {
		return store.Namespace{}, fmt.Errorf("memory store: update namespace %q: %w", n.Name, store.ErrNotFound)
	}
	old.Description, old.Retention, old.Weight = n.Description, n.Retention, n.Weight
	old.UpdatedAt = time.Unix(0, orNow(n.UpdatedAt, time.Now()).UnixNano())
	s.nss[n.Name] = old
	return old, nil
}

// DeleteNamespace deletes a namespace that holds nothing.
func (s *Store) DeleteNamespace(ctx context.Context, name string) error {
	if err := store.CheckDeletable(name); err != nil {
		return fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if _, ok := s.nss[name]; !ok {
		return fmt.Errorf("memory store: delete namespace %q: %w", name, store.ErrNotFound)
	}
	if c := s.contents(name); !c.Empty() {
		return fmt.Errorf("memory store: %w", &store.NamespaceInUseError{Namespace: name, Holds: c})
	}
	prefix := store.NamespacePrefix(name)
	for _, m := range s.modules { // its modules: its ownership and its names
		delete(m.owners, name)
		for n := range m.names {
			if strings.HasPrefix(n, prefix) {
				delete(m.names, n)
				delete(s.names, n)
			}
		}
	}
	delete(s.nss, name)
	return nil
}

// contents counts what namespace ns (not DefaultNamespace) holds. The
// caller holds mu.
func (s *Store) contents(ns string) store.NamespaceContents {
	prefix := store.NamespacePrefix(ns)
	var c store.NamespaceContents
	i := sort.SearchStrings(s.ids, prefix)
	for ; i < len(s.ids) && strings.HasPrefix(s.ids[i], prefix); i++ {
		c.Runs++
	}
	c.Schedules = countPrefixed(s.sched.schedules, prefix)
	c.Hooks = countPrefixed(s.sched.hooks, prefix)
	for id, j := range s.batches {
		if j.Status == store.BatchRunning && strings.HasPrefix(id, prefix) {
			c.BatchJobs++
		}
	}
	// Declarations are keyed by name; a declaration of another
	// namespace than default has a qualified name (attrs.go).
	c.AttrDecls = countPrefixed(s.decls, prefix)
	return c
}

// countPrefixed counts the keys of m that start with prefix.
func countPrefixed[V any](m map[string]V, prefix string) int64 {
	var n int64
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}
