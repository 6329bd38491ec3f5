package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Search attributes (store.AttrStore): the tables attr_decls and
// run_attrs of schema migration 17, shared with SQLite through rowscan.

// CreateAttr declares an attribute (see store.AttrStore). Creates lock
// the table against each other, so that MaxAttrDecls holds however many
// run at once.
func (d *DB) CreateAttr(ctx context.Context, a store.AttrDecl) (store.AttrDecl, error) {
	if err := store.CheckAttrDecl(a); err != nil {
		return store.AttrDecl{}, fmt.Errorf("postgres store: create attribute: %w", err)
	}
	a.CreatedAt = time.Unix(0, nanos(a.CreatedAt, time.Now()))
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE attr_decls IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM attr_decls WHERE namespace = $1`, store.NamespaceOf(a.Name)).Scan(&n); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO attr_decls (namespace, name, type, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			store.NamespaceOf(a.Name), a.Name, string(a.Type), a.CreatedAt.UnixNano())
		switch {
		case err != nil:
			return err
		case tag.RowsAffected() == 0:
			return fmt.Errorf("the name is taken: %w", store.ErrConflict)
		case n >= store.MaxAttrDecls:
			return fmt.Errorf("%w (limit %d)", store.ErrAttrLimit, store.MaxAttrDecls)
		}
		return nil
	})
	if err != nil {
		return store.AttrDecl{}, fmt.Errorf("postgres store: create attribute %q: %w", a.Name, err)
	}
	return a, nil
}

// Attrs lists the declarations by name.
func (d *DB) Attrs(ctx context.Context) ([]store.AttrDecl, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: list attributes: %w", err)
	}
	rows, err := d.pool.Query(ctx, `SELECT `+rowscan.AttrDeclColumns+` FROM attr_decls ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("postgres store: list attributes: %w", d.wrapClosed(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.AttrDecl, error) { return rowscan.AttrDecl(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres store: list attributes: %w", d.wrapClosed(err))
	}
	return out, nil
}

// DeleteAttr deletes a declaration and every run's value of it.
func (d *DB) DeleteAttr(ctx context.Context, name string) error {
	if unstorable(name) {
		return fmt.Errorf("postgres store: delete attribute %q: %w", name, store.ErrNotFound)
	}
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM attr_decls WHERE namespace = $1 AND name = $2`, store.NamespaceOf(name), name)
		if err == nil && tag.RowsAffected() == 0 {
			err = store.ErrNotFound
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM run_attrs WHERE name = $1`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: delete attribute %q: %w", name, err)
	}
	return nil
}

// RunAttrs returns the values of the runs ids.
func (d *DB) RunAttrs(ctx context.Context, ids []string) (map[string]map[string]any, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: run attributes: %w", err)
	}
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if !unstorable(id) {
			valid = append(valid, id)
		}
	}
	out := map[string]map[string]any{}
	rows, err := d.pool.Query(ctx, `SELECT `+rowscan.AttrColumns+` FROM run_attrs WHERE run_id = ANY($1)`, valid)
	if err != nil {
		return nil, fmt.Errorf("postgres store: run attributes: %w", d.wrapClosed(err))
	}
	defer rows.Close()
	for rows.Next() {
		id, name, v, err := rowscan.Attr(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres store: run attributes: %w", err)
		}
		if out[id] == nil {
			out[id] = map[string]any{}
		}
		out[id][name] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: run attributes: %w", d.wrapClosed(err))
	}
	return out, nil
}

var upsertAttrSQL = rowscan.UpsertAttrSQL("$")

// queueAttrs queues the writes of the values vs of run id; it returns
// how many statements it queued.
func queueAttrs(pb *pgx.Batch, id string, vs map[string]any) int {
	for name, v := range vs {
		pb.Queue(upsertAttrSQL, rowscan.AttrArgs(id, name, v)...)
	}
	return len(vs)
}

// queueBatchAttrs queues the attribute writes of b: those of the runs it
// creates, then b.Attrs. It returns how many statements it queued.
func queueBatchAttrs(pb *pgx.Batch, b *store.Batch) int {
	n := 0
	for i := range b.Creates {
		n += queueAttrs(pb, b.Creates[i].ID, b.Creates[i].Attrs)
	}
	for i := range b.Attrs {
		n += queueAttrs(pb, b.Attrs[i].RunID, b.Attrs[i].Values)
	}
	return n
}

// readAttrs reads the results of n attribute writes queueBatchAttrs
// queued.
func readAttrs(br pgx.BatchResults, n int) error {
	for range n {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("write attributes: %w", err)
		}
	}
	return nil
}
