package host

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// Namespace records (docs/tenants.md, "Namespaces"): a namespace's
// description, retention and weight. What belongs to a namespace is in
// its ids and names (store/namespace.go); these are the records of the
// namespaces themselves, for `skein namespace` and /v1/namespaces.

// NamespaceOptions are the fields of a namespace that CreateNamespace
// sets and UpdateNamespace changes; nil leaves a field as it is (in
// CreateNamespace: no description, the server's retention, weight 1).
type NamespaceOptions struct {
	Description *string
	// Retention is how long the namespace keeps ended runs:
	// store.RetentionDefault (the server's default), 0 (forever) or a
	// period.
	Retention *time.Duration
	Weight    *int // 1 to 1000, for fair shares
}

// apply returns n with the fields o sets.
func (o NamespaceOptions) apply(n store.Namespace) store.Namespace {
	if o.Description != nil {
		n.Description = *o.Description
	}
	if o.Retention != nil {
		n.Retention = *o.Retention
	}
	if o.Weight != nil {
		n.Weight = *o.Weight
	}
	return n
}

// CreateNamespace creates namespace name. A name or field that breaks
// its rule is ErrInvalid (the message names the rule); a namespace of
// that name, store.ErrConflict.
func (h *Host) CreateNamespace(ctx context.Context, name string, o NamespaceOptions) (store.Namespace, error) {
	n := o.apply(store.Namespace{Name: name, Retention: store.RetentionDefault, Weight: store.DefaultNamespaceWeight})
	if err := n.Check(); err != nil {
		return store.Namespace{}, invalidf("create namespace: %w", err)
	}
	n, err := h.cfg.Store.CreateNamespace(ctx, n)
	if err != nil {
		return store.Namespace{}, fmt.Errorf("create namespace %q: %w", name, err)
	}
	return n, nil
}

// Namespace returns namespace name; store.ErrNotFound when there is none.
func (h *Host) Namespace(ctx context.Context, name string) (store.Namespace, error) {
	if err := store.CheckNamespaceName(name); err != nil {
		return store.Namespace{}, invalidf("namespace: %w", err)
	}
	n, err := h.cfg.Store.Namespace(ctx, name)
	if err != nil {
		return store.Namespace{}, fmt.Errorf("namespace %q: %w", name, err)
	}
	return n, nil
}

// Namespaces lists every namespace by name, default included.
func (h *Host) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	ns, err := h.cfg.Store.Namespaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	return ns, nil
}

// UpdateNamespace changes the fields of namespace name that o sets and
// returns it as stored. A field that breaks its rule is ErrInvalid; an
// unknown name, store.ErrNotFound.
func (h *Host) UpdateNamespace(ctx context.Context, name string, o NamespaceOptions) (store.Namespace, error) {
	n, err := h.Namespace(ctx, name)
	if err != nil {
		return store.Namespace{}, fmt.Errorf("update %w", err)
	}
	n = o.apply(n)
	if err := n.Check(); err != nil {
		return store.Namespace{}, invalidf("update namespace: %w", err)
	}
	n.UpdatedAt = time.Time{} // now
	n, err = h.cfg.Store.UpdateNamespace(ctx, n)
	if err != nil {
		return store.Namespace{}, fmt.Errorf("update namespace %q: %w", name, err)
	}
	return n, nil
}

// DeleteNamespace deletes namespace name, which must hold nothing: a
// namespace holding runs, module names, schedules, hooks, running batch
// jobs, attribute declarations or API keys is a
// *store.NamespaceInUseError (store.ErrConflict) saying what is left.
// Namespace default is store.ErrDefaultNamespace; an unknown name
// store.ErrNotFound.
func (h *Host) DeleteNamespace(ctx context.Context, name string) error {
	if err := store.CheckNamespaceName(name); err != nil {
		return invalidf("delete namespace: %w", err)
	}
	if err := store.CheckDeletable(name); err != nil {
		return err
	}
	keys, err := h.namespaceKeys(ctx, name)
	if err != nil {
		return fmt.Errorf("delete namespace %q: count its API keys: %w", name, err)
	}
	if keys > 0 {
		return &store.NamespaceInUseError{Namespace: name, Holds: store.NamespaceContents{Keys: keys}}
	}
	if err := h.cfg.Store.DeleteNamespace(ctx, name); err != nil {
		return fmt.Errorf("delete namespace %q: %w", name, err)
	}
	return nil
}

// namespaceKeys counts the API keys of namespace ns that still work
// (neither revoked nor expired): a namespace is not deleted while one
// could act in it. Revoked and expired keys stay as records and do not
// keep it.
func (h *Host) namespaceKeys(ctx context.Context, ns string) (int64, error) {
	ks, err := h.cfg.Store.Keys(ctx, ns)
	if err != nil {
		return 0, err
	}
	var n int64
	now := time.Now()
	for _, k := range ks {
		if k.Namespace == ns && k.RevokedAt.IsZero() && (k.ExpiresAt.IsZero() || now.Before(k.ExpiresAt)) {
			n++
		}
	}
	return n, nil
}
