package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Namespace records (store.NamespaceStore): the table namespaces of
// schema migration 20, shared with SQLite through rowscan.

// CreateNamespace stores a new namespace.
func (d *DB) CreateNamespace(ctx context.Context, n store.Namespace) (store.Namespace, error) {
	if err := n.Check(); err != nil {
		return store.Namespace{}, fmt.Errorf("postgres store: create namespace: %w", err)
	}
	n = n.ForCreate(time.Now())
	err := d.insertNamed(ctx, `INSERT INTO namespaces (`+rowscan.NamespaceColumns+`) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING`,
		n.Name, n.Description, int64(n.Retention), n.Weight, n.CreatedAt.UnixNano(), n.UpdatedAt.UnixNano())
	if err != nil {
		return store.Namespace{}, fmt.Errorf("postgres store: create namespace %q: %w", n.Name, err)
	}
	return n, nil
}

// Namespace returns one namespace.
func (d *DB) Namespace(ctx context.Context, name string) (store.Namespace, error) {
	if err := d.check(ctx); err != nil {
		return store.Namespace{}, fmt.Errorf("postgres store: namespace %q: %w", name, err)
	}
	if unstorable(name) {
		return store.Namespace{}, fmt.Errorf("postgres store: namespace %q: %w", name, store.ErrNotFound)
	}
	n, err := rowscan.Namespace(d.pool.QueryRow(ctx, `SELECT `+rowscan.NamespaceColumns+` FROM namespaces WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Namespace{}, fmt.Errorf("postgres store: namespace %q: %w", name, d.wrapClosed(err))
	}
	return n, nil
}

// Namespaces lists every namespace by name.
func (d *DB) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: list namespaces: %w", err)
	}
	rows, err := d.pool.Query(ctx, `SELECT `+rowscan.NamespaceColumns+` FROM namespaces ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("postgres store: list namespaces: %w", d.wrapClosed(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Namespace, error) { return rowscan.Namespace(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres store: list namespaces: %w", d.wrapClosed(err))
	}
	return out, nil
}

// UpdateNamespace replaces a namespace's description, retention and
// weight.
func (d *DB) UpdateNamespace(ctx context.Context, n store.Namespace) (store.Namespace, error) {
	if err := n.Check(); err != nil {
		return store.Namespace{}, fmt.Errorf("postgres store: update namespace: %w", err)
	}
	updated := n.UpdatedAt
	if updated.IsZero() {
		updated = time.Now()
	}
	var out store.Namespace
	err := d.inStmt(ctx, func() error {
		var err error
		out, err = rowscan.Namespace(d.pool.QueryRow(ctx, `UPDATE namespaces SET description = $1, retention = $2, weight = $3, updated_at = $4 WHERE name = $5 RETURNING `+rowscan.NamespaceColumns,
			n.Description, int64(n.Retention), n.Weight, updated.UnixNano(), n.Name))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Namespace{}, fmt.Errorf("postgres store: update namespace %q: %w", n.Name, err)
	}
	return out, nil
}

// DeleteNamespace deletes a namespace that holds nothing. The namespace's
// row is locked while its contents are counted, so two deletes do not
// interleave; a write into the namespace that commits during the count
// is not seen by it (RATIONALE.md, "Namespace records: a table beside the prefixes; a delete counts key ranges").
func (d *DB) DeleteNamespace(ctx context.Context, name string) error {
	if err := store.CheckDeletable(name); err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	if unstorable(name) {
		return fmt.Errorf("postgres store: delete namespace %q: %w", name, store.ErrNotFound)
	}
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM namespaces WHERE name = $1 FOR UPDATE`, name).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		c, err := rowscan.NamespaceContents(tx.QueryRow(ctx, rowscan.NamespaceContentsSQL("$"), rowscan.NamespaceContentsArgs(name)...))
		if err != nil {
			return err
		}
		if !c.Empty() {
			return &store.NamespaceInUseError{Namespace: name, Holds: c}
		}
		for _, q := range rowscan.NamespaceModulesDelete("$", name) {
			if _, err := tx.Exec(ctx, q.SQL, q.Args...); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `DELETE FROM namespaces WHERE name = $1`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: delete namespace %q: %w", name, err)
	}
	return nil
}
