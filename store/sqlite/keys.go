package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// API keys (store.KeyStore): rowscan's statements, shared with
// store/postgres (schema migration "API keys").

// CreateKey stores a new key.
func (d *DB) CreateKey(ctx context.Context, k store.Key) (store.Key, error) {
	if err := k.Check(); err != nil {
		return store.Key{}, fmt.Errorf("sqlite store: create key: %w", err)
	}
	k.CreatedAt = time.Unix(0, nanos(k.CreatedAt, time.Now()))
	k.LastUsedAt, k.RevokedAt = time.Time{}, time.Time{}
	args, err := rowscan.KeyArgs(k)
	if err != nil {
		return store.Key{}, fmt.Errorf("sqlite store: create key: %w", err)
	}
	err = d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		res, err := w.tx.ExecContext(w.ctx, rowscan.KeyInsert, args...)
		return inserted(res, err)
	}})
	if err != nil {
		return store.Key{}, fmt.Errorf("sqlite store: create key %s: %w", k.ID, err)
	}
	return k, nil
}

// KeyByDigest returns the key of a secret's digest.
func (d *DB) KeyByDigest(ctx context.Context, digest string) (store.Key, error) {
	k, err := rowscan.Key(d.rd[readKeyByDigest].QueryRowContext(ctx, digest), sql.ErrNoRows)
	if err != nil {
		return store.Key{}, fmt.Errorf("sqlite store: key by digest: %w", err)
	}
	return k, nil
}

func (d *DB) keyByID(ctx context.Context, id string) (store.Key, error) {
	k, err := rowscan.Key(d.rdb.QueryRowContext(ctx, rowscan.KeyByID, id), sql.ErrNoRows)
	if err != nil {
		return store.Key{}, fmt.Errorf("sqlite store: key %s: %w", id, err)
	}
	return k, nil
}

// Keys lists the keys of a namespace (every key for ""), oldest first.
func (d *DB) Keys(ctx context.Context, ns string) ([]store.Key, error) {
	rows, err := d.rdb.QueryContext(ctx, rowscan.KeyList, ns)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: keys of %q: %w", ns, err)
	}
	defer rows.Close()
	var ks []store.Key
	for rows.Next() {
		k, err := rowscan.Key(rows, sql.ErrNoRows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: keys of %q: %w", ns, err)
		}
		ks = append(ks, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: keys of %q: %w", ns, err)
	}
	return ks, nil
}

// AnyKey reports whether a key is stored.
func (d *DB) AnyKey(ctx context.Context) (bool, error) {
	var n int64
	if err := d.rd[readAnyKey].QueryRowContext(ctx).Scan(&n); err != nil {
		return false, fmt.Errorf("sqlite store: any key: %w", err)
	}
	return n > 0, nil
}

// RevokeKey marks a key revoked; revoking it again keeps the first time.
func (d *DB) RevokeKey(ctx context.Context, id string, at time.Time) (store.Key, error) {
	if _, err := d.updateKey(ctx, rowscan.KeyRevoke, id, nanos(at, time.Now())); err != nil {
		return store.Key{}, fmt.Errorf("sqlite store: revoke key %s: %w", id, err)
	}
	return d.keyByID(ctx, id)
}

// RotateKey replaces a key's digest.
func (d *DB) RotateKey(ctx context.Context, id, digest string) (store.Key, error) {
	n, err := d.updateKey(ctx, rowscan.KeyRotate, id, digest)
	if err != nil {
		return store.Key{}, fmt.Errorf("sqlite store: rotate key %s: %w", id, err)
	}
	k, err := d.keyByID(ctx, id)
	if n == 0 {
		return store.Key{}, fmt.Errorf("sqlite store: rotate key %s: %w", id, rowscan.KeyUnchanged(k, err))
	}
	return k, err
}

// TouchKey records a key's last use.
func (d *DB) TouchKey(ctx context.Context, id string, at time.Time) error {
	n, err := d.updateKey(ctx, rowscan.KeyTouch, id, at.UnixNano())
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite store: touch key %s: %w", id, err)
	}
	return nil
}

// updateKey runs one of rowscan's key updates and returns the rows it
// changed.
func (d *DB) updateKey(ctx context.Context, q, id string, v any) (int64, error) {
	var n int64
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		res, err := w.tx.ExecContext(w.ctx, q, id, v)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	}})
	return n, err
}
