package rowscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// KeyColumns are the columns of api_keys that Key reads, in order.
const KeyColumns = `id, namespace, role, name, digest, activities, created_at, expires_at, last_used_at, revoked_at`

// The statements of store.KeyStore, in SQLite's ?N markers (Postgres
// rewrites them, Dollars). Times are unix ns, 0 for none.
const (
	KeyInsert   = `INSERT INTO api_keys (` + KeyColumns + `) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, 0) ON CONFLICT DO NOTHING`
	KeyByDigest = `SELECT ` + KeyColumns + ` FROM api_keys WHERE digest = ?1`
	KeyByID     = `SELECT ` + KeyColumns + ` FROM api_keys WHERE id = ?1`
	KeyList     = `SELECT ` + KeyColumns + ` FROM api_keys WHERE ?1 = '' OR namespace = ?1 ORDER BY created_at, id`
	KeyAny      = `SELECT count(*) FROM (SELECT 1 FROM api_keys LIMIT 1) AS k`
	KeyRevoke   = `UPDATE api_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at = 0`
	KeyRotate   = `UPDATE api_keys SET digest = ?2 WHERE id = ?1 AND revoked_at = 0`
	KeyTouch    = `UPDATE api_keys SET last_used_at = ?2 WHERE id = ?1`
)

// KeyArgs are the arguments of KeyInsert for k.
func KeyArgs(k store.Key) ([]any, error) {
	acts, err := json.Marshal(k.Activities)
	if err != nil {
		return nil, fmt.Errorf("key %s: activities: %w", k.ID, err)
	}
	if k.Activities == nil {
		acts = []byte("[]")
	}
	return []any{k.ID, k.Namespace, k.Role, k.Name, k.Digest, string(acts), k.CreatedAt.UnixNano(), unixOr0(k.ExpiresAt)}, nil
}

func unixOr0(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func timeOr0(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Key reads a row of KeyColumns. A missing row (an error that is noRows)
// is store.ErrNotFound.
func Key(s Scanner, noRows error) (store.Key, error) {
	var k store.Key
	var acts string
	var created, expires, used, revoked int64
	err := s.Scan(&k.ID, &k.Namespace, &k.Role, &k.Name, &k.Digest, &acts, &created, &expires, &used, &revoked)
	if errors.Is(err, noRows) {
		return store.Key{}, store.ErrNotFound
	}
	if err != nil {
		return store.Key{}, err
	}
	if err := json.Unmarshal([]byte(acts), &k.Activities); err != nil {
		return store.Key{}, fmt.Errorf("key %s: decode activities: %w", k.ID, err)
	}
	if len(k.Activities) == 0 {
		k.Activities = nil
	}
	k.CreatedAt, k.ExpiresAt, k.LastUsedAt, k.RevokedAt = time.Unix(0, created), timeOr0(expires), timeOr0(used), timeOr0(revoked)
	return k, nil
}

// KeyUnchanged is the error of a revocation or rotation that changed no
// row, given the key as read after it (or its read's error): the key is
// unknown (store.ErrNotFound) or revoked (store.ErrConflict).
func KeyUnchanged(k store.Key, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("key %s is revoked: %w", k.ID, store.ErrConflict)
}
