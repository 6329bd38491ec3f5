package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Namespace records (store.NamespaceStore): the table namespaces of
// schema migration 22, shared with Postgres through rowscan.

// CreateNamespace stores a new namespace.
func (d *DB) CreateNamespace(ctx context.Context, n store.Namespace) (store.Namespace, error) {
	if err := n.Check(); err != nil {
		return store.Namespace{}, fmt.Errorf("sqlite store: create namespace: %w", err)
	}
	n = n.ForCreate(time.Now())
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		res, err := w.tx.ExecContext(w.ctx, `INSERT INTO namespaces (`+rowscan.NamespaceColumns+`) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			n.Name, n.Description, int64(n.Retention), n.Weight, n.CreatedAt.UnixNano(), n.UpdatedAt.UnixNano())
		return inserted(res, err)
	}})
	if err != nil {
		return store.Namespace{}, fmt.Errorf("sqlite store: create namespace %q: %w", n.Name, err)
	}
	return n, nil
}

// Namespace returns one namespace.
func (d *DB) Namespace(ctx context.Context, name string) (store.Namespace, error) {
	n, err := rowscan.Namespace(d.rdb.QueryRowContext(ctx, `SELECT `+rowscan.NamespaceColumns+` FROM namespaces WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Namespace{}, fmt.Errorf("sqlite store: namespace %q: %w", name, err)
	}
	return n, nil
}

// Namespaces lists every namespace by name.
func (d *DB) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	rows, err := d.rdb.QueryContext(ctx, `SELECT `+rowscan.NamespaceColumns+` FROM namespaces ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: list namespaces: %w", err)
	}
	defer rows.Close()
	var out []store.Namespace
	for rows.Next() {
		n, err := rowscan.Namespace(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: list namespaces: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: list namespaces: %w", err)
	}
	return out, nil
}

// UpdateNamespace replaces a namespace's description, retention and
// weight.
func (d *DB) UpdateNamespace(ctx context.Context, n store.Namespace) (store.Namespace, error) {
	if err := n.Check(); err != nil {
		return store.Namespace{}, fmt.Errorf("sqlite store: update namespace: %w", err)
	}
	updated := nanos(n.UpdatedAt, time.Now())
	var out store.Namespace
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var err error
		out, err = rowscan.Namespace(w.tx.QueryRowContext(w.ctx, `UPDATE namespaces SET description = ?, retention = ?, weight = ?, updated_at = ? WHERE name = ? RETURNING `+rowscan.NamespaceColumns,
			n.Description, int64(n.Retention), n.Weight, updated, n.Name))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	}})
	if err != nil {
		return store.Namespace{}, fmt.Errorf("sqlite store: update namespace %q: %w", n.Name, err)
	}
	return out, nil
}

// DeleteNamespace deletes a namespace that holds nothing: the count of
// what it holds and the delete are one write transaction, and SQLite has
// one writer, so nothing enters the namespace in between.
func (d *DB) DeleteNamespace(ctx context.Context, name string) error {
	if err := store.CheckDeletable(name); err != nil {
		return fmt.Errorf("sqlite store: %w", err)
	}
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var one int
		if err := w.tx.QueryRowContext(w.ctx, `SELECT 1 FROM namespaces WHERE name = ?`, name).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		c, err := rowscan.NamespaceContents(w.tx.QueryRowContext(w.ctx, rowscan.NamespaceContentsSQL("?"), rowscan.NamespaceContentsArgs(name)...))
		if err != nil {
			return err
		}
		if !c.Empty() {
			return &store.NamespaceInUseError{Namespace: name, Holds: c}
		}
		for _, q := range rowscan.NamespaceModulesDelete("?", name) {
			if _, err := w.tx.ExecContext(w.ctx, q.SQL, q.Args...); err != nil {
				return err
			}
		}
		_, err = w.tx.ExecContext(w.ctx, `DELETE FROM namespaces WHERE name = ?`, name)
		return err
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: delete namespace %q: %w", name, err)
	}
	return nil
}
