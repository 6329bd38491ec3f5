package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// API keys (store.KeyStore): rowscan's statements, shared with
// store/sqlite, in $N markers.

var (
	keyInsert   = rowscan.Dollars(rowscan.KeyInsert)
	keyByDigest = rowscan.Dollars(rowscan.KeyByDigest)
	keyByID     = rowscan.Dollars(rowscan.KeyByID)
	keyList     = rowscan.Dollars(rowscan.KeyList)
	keyRevoke   = rowscan.Dollars(rowscan.KeyRevoke)
	keyRotate   = rowscan.Dollars(rowscan.KeyRotate)
	keyTouch    = rowscan.Dollars(rowscan.KeyTouch)
)

// CreateKey stores a new key.
func (d *DB) CreateKey(ctx context.Context, k store.Key) (store.Key, error) {
	if err := k.Check(); err != nil {
		return store.Key{}, fmt.Errorf("postgres store: create key: %w", err)
	}
	k.CreatedAt = time.Unix(0, nanos(k.CreatedAt, time.Now()))
	k.LastUsedAt, k.RevokedAt = time.Time{}, time.Time{}
	args, err := rowscan.KeyArgs(k)
	if err != nil {
		return store.Key{}, fmt.Errorf("postgres store: create key: %w", err)
	}
	if err := d.insertNamed(ctx, keyInsert, args...); err != nil {
		return store.Key{}, fmt.Errorf("postgres store: create key %s: %w", k.ID, err)
	}
	return k, nil
}

// KeyByDigest returns the key of a secret's digest.
func (d *DB) KeyByDigest(ctx context.Context, digest string) (store.Key, error) {
	return d.oneKey(ctx, keyByDigest, digest, "key by digest")
}

func (d *DB) oneKey(ctx context.Context, q, arg, what string) (store.Key, error) {
	if err := d.check(ctx); err != nil {
		return store.Key{}, fmt.Errorf("postgres store: %s: %w", what, err)
	}
	if unstorable(arg) {
		return store.Key{}, fmt.Errorf("postgres store: %s: %w", what, store.ErrNotFound)
	}
	k, err := rowscan.Key(d.pool.QueryRow(ctx, q, arg), pgx.ErrNoRows)
	if err != nil {
		return store.Key{}, fmt.Errorf("postgres store: %s: %w", what, d.wrapClosed(err))
	}
	return k, nil
}

// Keys lists the keys of a namespace (every key for ""), oldest first.
func (d *DB) Keys(ctx context.Context, ns string) ([]store.Key, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: keys of %q: %w", ns, err)
	}
	if unstorable(ns) {
		return nil, nil
	}
	rows, err := d.pool.Query(ctx, keyList, ns)
	if err != nil {
		return nil, fmt.Errorf("postgres store: keys of %q: %w", ns, d.wrapClosed(err))
	}
	ks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Key, error) { return rowscan.Key(r, pgx.ErrNoRows) })
	if err != nil {
		return nil, fmt.Errorf("postgres store: keys of %q: %w", ns, d.wrapClosed(err))
	}
	return ks, nil
}

// AnyKey reports whether a key is stored.
func (d *DB) AnyKey(ctx context.Context) (bool, error) {
	if err := d.check(ctx); err != nil {
		return false, fmt.Errorf("postgres store: any key: %w", err)
	}
	var n int64
	if err := d.pool.QueryRow(ctx, rowscan.KeyAny).Scan(&n); err != nil {
		return false, fmt.Errorf("postgres store: any key: %w", d.wrapClosed(err))
	}
	return n > 0, nil
}

// RevokeKey marks a key revoked; revoking it again keeps the first time.
func (d *DB) RevokeKey(ctx context.Context, id string, at time.Time) (store.Key, error) {
	if _, err := d.updateKey(ctx, keyRevoke, id, nanos(at, time.Now())); err != nil {
		return store.Key{}, fmt.Errorf("postgres store: revoke key %s: %w", id, err)
	}
	return d.oneKey(ctx, keyByID, id, "key "+id)
}

// RotateKey replaces a key's digest.
func (d *DB) RotateKey(ctx context.Context, id, digest string) (store.Key, error) {
	n, err := d.updateKey(ctx, keyRotate, id, digest)
	if err != nil {
		return store.Key{}, fmt.Errorf("postgres store: rotate key %s: %w", id, err)
	}
	k, err := d.oneKey(ctx, keyByID, id, "key "+id)
	if n == 0 {
		return store.Key{}, fmt.Errorf("postgres store: rotate key %s: %w", id, rowscan.KeyUnchanged(k, err))
	}
	return k, err
}

// TouchKey records a key's last use.
func (d *DB) TouchKey(ctx context.Context, id string, at time.Time) error {
	n, err := d.updateKey(ctx, keyTouch, id, at.UnixNano())
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres store: touch key %s: %w", id, err)
	}
	return nil
}

// updateKey runs one of the key updates and returns the rows it changed.
func (d *DB) updateKey(ctx context.Context, q, id string, v any) (int64, error) {
	if unstorable(id) {
		return 0, nil
	}
	var n int64
	err := d.inStmt(ctx, func() error {
		tag, err := d.pool.Exec(ctx, q, id, v)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
