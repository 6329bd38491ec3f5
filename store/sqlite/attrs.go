package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Search attributes (store.AttrStore): the tables attr_decls and
// run_attrs of schema migration 17, shared with Postgres through
// rowscan.

// CreateAttr declares an attribute (see store.AttrStore).
func (d *DB) CreateAttr(ctx context.Context, a store.AttrDecl) (store.AttrDecl, error) {
	if err := store.CheckAttrDecl(a); err != nil {
		return store.AttrDecl{}, fmt.Errorf("sqlite store: create attribute: %w", err)
	}
	a.CreatedAt = time.Unix(0, nanos(a.CreatedAt, time.Now()))
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var n int
		if err := w.tx.QueryRowContext(w.ctx, `SELECT count(*) FROM attr_decls WHERE namespace = ?`, store.NamespaceOf(a.Name)).Scan(&n); err != nil {
			return err
		}
		res, err := w.tx.ExecContext(w.ctx, `INSERT INTO attr_decls (namespace, name, type, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			store.NamespaceOf(a.Name), a.Name, string(a.Type), a.CreatedAt.UnixNano())
		if err := inserted(res, err); err != nil {
			return err
		}
		if n >= store.MaxAttrDecls {
			return fmt.Errorf("%w (limit %d)", store.ErrAttrLimit, store.MaxAttrDecls)
		}
		return nil
	}})
	if err != nil {
		return store.AttrDecl{}, fmt.Errorf("sqlite store: create attribute %q: %w", a.Name, err)
	}
	return a, nil
}

// Attrs lists the declarations by name.
func (d *DB) Attrs(ctx context.Context) ([]store.AttrDecl, error) {
	rows, err := d.rdb.QueryContext(ctx, `SELECT `+rowscan.AttrDeclColumns+` FROM attr_decls ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: list attributes: %w", err)
	}
	defer rows.Close()
	var out []store.AttrDecl
	for rows.Next() {
		a, err := rowscan.AttrDecl(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: list attributes: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: list attributes: %w", err)
	}
	return out, nil
}

// DeleteAttr deletes a declaration and every run's value of it.
func (d *DB) DeleteAttr(ctx context.Context, name string) error {
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		res, err := w.tx.ExecContext(w.ctx, `DELETE FROM attr_decls WHERE namespace = ? AND name = ?`, store.NamespaceOf(name), name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orNotFound(err)
		}
		_, err = w.tx.ExecContext(w.ctx, `DELETE FROM run_attrs WHERE name = ?`, name)
		return err
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: delete attribute %q: %w", name, err)
	}
	return nil
}

// orNotFound is err, or store.ErrNotFound when it is nil.
func orNotFound(err error) error {
	if err != nil {
		return err
	}
	return store.ErrNotFound
}

// attrsChunk is the most run ids one read of RunAttrs names.
const attrsChunk = 500

// RunAttrs returns the values of the runs ids.
func (d *DB) RunAttrs(ctx context.Context, ids []string) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for len(ids) > 0 {
		n := min(len(ids), attrsChunk)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		q := `SELECT ` + rowscan.AttrColumns + ` FROM run_attrs WHERE run_id IN (?` + strings.Repeat(", ?", n-1) + `)`
		if err := d.readAttrs(ctx, out, q, args); err != nil {
			return nil, fmt.Errorf("sqlite store: run attributes: %w", err)
		}
		ids = ids[n:]
	}
	return out, nil
}

// readAttrs adds the rows of query q to out.
func (d *DB) readAttrs(ctx context.Context, out map[string]map[string]any, q string, args []any) error {
	rows, err := d.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		id, name, v, err := rowscan.Attr(rows)
		if err != nil {
			return err
		}
		if out[id] == nil {
			out[id] = map[string]any{}
		}
		out[id][name] = v
	}
	return rows.Err()
}

// writeAttrs writes the values of a batch, or of a run created, inside
// the writer's transaction.
func writeAttrs(w *wtx, id string, vs map[string]any) error {
	for name, v := range vs {
		if _, err := w.tx.ExecContext(w.ctx, upsertAttrSQL, rowscan.AttrArgs(id, name, v)...); err != nil {
			return fmt.Errorf("run %s: attribute %q: %w", id, name, err)
		}
	}
	return nil
}

var upsertAttrSQL = rowscan.UpsertAttrSQL("?")

// writeBatchAttrs writes Batch.Attrs.
func writeBatchAttrs(w *wtx, attrs []store.RunAttrs) error {
	for i := range attrs {
		if err := writeAttrs(w, attrs[i].RunID, attrs[i].Values); err != nil {
			return err
		}
	}
	return nil
}
