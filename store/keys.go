package store

import (
	"context"
	"fmt"
	"time"
)

// API keys (host/keys.go): a secret a client sends as its bearer token,
// with the role and namespace it acts in. The store keeps the secret's
// digest only, never the secret.

// Key is a stored API key.
type Key struct {
	ID        string // public id, "k_" and 12 hex digits
	Namespace string // the namespace it acts in; empty for a root key
	Role      string // read, run, deploy, worker, admin or root (host.KeyRoles)
	Name      string // a label
	Digest    string // hex SHA-256 of the secret
	// Activities are, for a worker key, the activity names it may claim
	// tasks of; empty: every name.
	Activities []string
	CreatedAt  time.Time
	ExpiresAt  time.Time // zero: never
	LastUsedAt time.Time // zero: never used (written at most once a minute)
	RevokedAt  time.Time // zero: not revoked
}

// KeyStore keeps API keys.
type KeyStore interface {
	// CreateKey stores k; an ID or Digest already stored fails with
	// ErrConflict.
	CreateKey(ctx context.Context, k Key) (Key, error)
	// KeyByDigest returns the key whose secret has digest d (one indexed
	// read), or ErrNotFound.
	KeyByDigest(ctx context.Context, digest string) (Key, error)
	// Keys lists the keys of namespace ns, oldest first; an empty ns lists
	// every key.
	Keys(ctx context.Context, ns string) ([]Key, error)
	// AnyKey reports whether any key is stored, revoked or not.
	AnyKey(ctx context.Context) (bool, error)
	// RevokeKey marks key id revoked at at (once: a second revocation
	// keeps the first time) and returns it; an unknown id is ErrNotFound.
	RevokeKey(ctx context.Context, id string, at time.Time) (Key, error)
	// RotateKey replaces the digest of key id (the old secret stops
	// matching at once) and returns it; an unknown id is ErrNotFound, a
	// revoked one ErrConflict, a digest stored already ErrConflict.
	RotateKey(ctx context.Context, id, digest string) (Key, error)
	// TouchKey records the key's last use at at. The caller throttles it.
	TouchKey(ctx context.Context, id string, at time.Time) error
}

// Check checks a key before it is stored.
func (k Key) Check() error {
	switch {
	case k.ID == "":
		return fmt.Errorf("key: an empty id")
	case len(k.Digest) != 64:
		return fmt.Errorf("key %s: the digest is not 64 hex digits", k.ID)
	case k.Role == "":
		return fmt.Errorf("key %s: no role", k.ID)
	}
	for _, t := range append([]string{k.ID, k.Namespace, k.Role, k.Name, k.Digest}, k.Activities...) {
		if err := CheckText("key "+k.ID, t); err != nil {
			return err
		}
	}
	return nil
}
