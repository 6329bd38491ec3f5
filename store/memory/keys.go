package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/skeinrun/skein/store"
)

// API keys (store.KeyStore), by id; nil until the first. A lookup by
// digest walks them: the memory store is for tests and small embedders.

// CreateKey stores a new key.
func (s *Store) CreateKey(ctx context.Context, k store.Key) (store.Key, error) {
	if err := k.Check(); err != nil {
		return store.Key{}, fmt.Errorf("memory store: create key: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Key{}, fmt.Errorf("memory store: create key %s: %w", k.ID, err)
	}
	for _, o := range s.keys {
		if o.ID == k.ID || o.Digest == k.Digest {
			return store.Key{}, fmt.Errorf("memory store: create key %s: the id or digest is taken: %w", k.ID, store.ErrConflict)
		}
	}
	if s.keys == nil {
		s.keys = map[string]store.Key{}
	}
	k.CreatedAt = orNow(k.CreatedAt, time.Now())
	k.Activities = slices.Clone(k.Activities)
	s.keys[k.ID] = k
	return copyKey(k), nil
}

func copyKey(k store.Key) store.Key {
	k.Activities = slices.Clone(k.Activities)
	return k
}

// KeyByDigest returns the key of a secret's digest.
func (s *Store) KeyByDigest(ctx context.Context, digest string) (store.Key, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return store.Key{}, fmt.Errorf("memory store: key by digest: %w", err)
	}
	for _, k := range s.keys {
		if k.Digest == digest {
			return copyKey(k), nil
		}
	}
	return store.Key{}, fmt.Errorf("memory store: key by digest: %w", store.ErrNotFound)
}

// Keys lists the keys of a namespace (every key for ""), oldest first.
func (s *Store) Keys(ctx context.Context, ns string) ([]store.Key, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: keys of %q: %w", ns, err)
	}
	var ks []store.Key
	for _, k := range s.keys {
		if ns == "" || k.Namespace == ns {
			ks = append(ks, copyKey(k))
		}
	}
	slices.SortFunc(ks, func(a, b store.Key) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return ks, nil
}

// AnyKey reports whether a key is stored.
func (s *Store) AnyKey(ctx context.Context) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return false, fmt.Errorf("memory store: any key: %w", err)
	}
	return len(s.keys) > 0, nil
}

// RevokeKey marks a key revoked.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) (store.Key, error) {
	return s.editKey(ctx, "revoke", id, func(k *store.Key) error {
		if k.RevokedAt.IsZero() {
			k.RevokedAt = orNow(at, time.Now())
		}
		return nil
	})
}

// RotateKey replaces a key's digest.
func (s *Store) RotateKey(ctx context.Context, id, digest string) (store.Key, error) {
	return s.editKey(ctx, "rotate", id, func(k *store.Key) error {
		if !k.RevokedAt.IsZero() {
			return fmt.Errorf("key %s is revoked: %w", id, store.ErrConflict)
		}
		for _, o := range s.keys {
			if o.Digest == digest {
				return fmt.Errorf("the digest is taken: %w", store.ErrConflict)
			}
		}
		k.Digest = digest
		return nil
	})
}

// TouchKey records a key's last use.
func (s *Store) TouchKey(ctx context.Context, id string, at time.Time) error {
	_, err := s.editKey(ctx, "touch", id, func(k *store.Key) error {
		k.LastUsedAt = at.Round(0)
		return nil
	})
	return err
}

// editKey applies edit to key id under the lock.
func (s *Store) editKey(ctx context.Context, what, id string, edit func(*store.Key) error) (store.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Key{}, fmt.Errorf("memory store: %s key %s: %w", what, id, err)
	}
	k, ok := s.keys[id]
	if !ok {
		return store.Key{}, fmt.Errorf("memory store: %s key %s: %w", what, id, store.ErrNotFound)
	}
	if err := edit(&k); err != nil {
		return store.Key{}, fmt.Errorf("memory store: %s key %s: %w", what, id, err)
	}
	s.keys[id] = k
	return copyKey(k), nil
}
