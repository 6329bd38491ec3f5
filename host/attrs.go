package host

import (
	"context"
	"fmt"

	"github.com/skeinrun/skein/store"
)

// Search attributes (docs/operations.md, "Search attributes"): the
// declarations, and the values a run carries. A workflow sets them with
// skein.SetAttributes (a durable op, host/internal/exec/attrs.go); a
// start request with StartOptions.Attributes.

// CreateAttribute declares the search attribute name of type t. A name
// or type that breaks a rule is ErrInvalid; a declared name is
// store.ErrConflict; past store.MaxAttrDecls, store.ErrAttrLimit.
func (h *Host) CreateAttribute(ctx context.Context, name string, t store.AttrType) (store.AttrDecl, error) {
	d := store.AttrDecl{Name: name, Type: t}
	if err := store.CheckAttrDecl(d); err != nil {
		return store.AttrDecl{}, invalidf("create attribute: %w", err)
	}
	d, err := h.cfg.Store.CreateAttr(ctx, d)
	if err != nil {
		return store.AttrDecl{}, fmt.Errorf("create attribute %q: %w", name, err)
	}
	return d, nil
}

// Attributes lists the declared search attributes by name.
func (h *Host) Attributes(ctx context.Context) ([]store.AttrDecl, error) {
	ds, err := h.cfg.Store.Attrs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list attributes: %w", err)
	}
	return ds, nil
}

// DeleteAttribute deletes a declaration and every run's value of it;
// store.ErrNotFound when it is not declared.
func (h *Host) DeleteAttribute(ctx context.Context, name string) error {
	if err := h.cfg.Store.DeleteAttr(ctx, name); err != nil {
		return fmt.Errorf("delete attribute %q: %w", name, err)
	}
	return nil
}

// RunAttributes returns the search attributes of the runs ids, by run id
// (a run with none is absent).
func (h *Host) RunAttributes(ctx context.Context, ids ...string) (map[string]map[string]any, error) {
	m, err := h.cfg.Store.RunAttrs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("run attributes: %w", err)
	}
	return m, nil
}

// startAttrs checks a start request's attributes against the
// declarations (store.TypedAttrs) and returns them typed; nil for none.
func (h *Host) startAttrs(ctx context.Context, vs map[string]any) (map[string]any, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	ds, err := h.cfg.Store.Attrs(ctx)
	if err != nil {
		return nil, fmt.Errorf("read attribute declarations: %w", err)
	}
	typed, err := store.TypedAttrs(ds, vs)
	if err != nil {
		return nil, invalid(err)
	}
	return typed, nil
}
