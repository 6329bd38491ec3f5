package host

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/store"
)

// API keys: a client sends a key's secret as its bearer token; the key
// says in which namespace and with which role it acts. The store keeps
// the secret's SHA-256 digest only. Nothing is cached: every
// Authenticate reads the store, so a revocation, a rotation or an expiry
// takes effect on the next request.

// The roles of a key, from the least to the most allowed (worker is
// apart: the task protocol only). docs/security.md says what each may do.
const (
	RoleRead   = "read"
	RoleRun    = "run"
	RoleDeploy = "deploy"
	RoleWorker = "worker"
	RoleAdmin  = "admin"
	RoleRoot   = "root" // server-wide: a root key has no namespace
)

// KeyRoles are the roles a key may have.
var KeyRoles = []string{RoleRead, RoleRun, RoleDeploy, RoleWorker, RoleAdmin, RoleRoot}

// SecretPrefix begins every key's secret, so that secret scanners find
// them in code and logs.
const SecretPrefix = "sk_"

// ErrUnauthenticated is what Authenticate's refusals wrap: the secret is
// not that of a usable key. A server answers every one of them alike
// (401), not saying which.
var ErrUnauthenticated = errors.New("not a valid API key")

// Authenticate's refusals, each an ErrUnauthenticated.
var (
	ErrKeyUnknown = fmt.Errorf("%w: no key has this secret", ErrUnauthenticated)
	ErrKeyRevoked = fmt.Errorf("%w: the key is revoked", ErrUnauthenticated)
	ErrKeyExpired = fmt.Errorf("%w: the key has expired", ErrUnauthenticated)
)

// keyUseEvery is how often the last use of a key is written at most, so
// that requests do not each turn into a write.
const keyUseEvery = time.Minute

// KeyOptions describe a new key.
type KeyOptions struct {
	Namespace string // required but for a root key, which has none
	Role      string // one of KeyRoles
	Name      string // a label
	ExpiresAt time.Time
	// Activities, for a worker key, are the activity names it may claim
	// tasks of; empty: every name.
	Activities []string
}

// check checks o against the rules of a key.
func (o KeyOptions) check(now time.Time) error {
	switch {
	case !slices.Contains(KeyRoles, o.Role):
		return fmt.Errorf("%w: role %q is not one of %s", ErrInvalid, o.Role, strings.Join(KeyRoles, ", "))
	case o.Role == RoleRoot && o.Namespace != "":
		return fmt.Errorf("%w: a root key is server-wide: it takes no namespace (got %q)", ErrInvalid, o.Namespace)
	case !o.ExpiresAt.IsZero() && !o.ExpiresAt.After(now):
		return fmt.Errorf("%w: the expiry %s is not in the future", ErrInvalid, o.ExpiresAt.Format(time.RFC3339))
	case len(o.Activities) > 0 && o.Role != RoleWorker:
		return fmt.Errorf("%w: only a worker key is granted activity names (role %q)", ErrInvalid, o.Role)
	case len(o.Name) > 200:
		return fmt.Errorf("%w: a key's name is at most 200 bytes", ErrInvalid)
	}
	if o.Role != RoleRoot {
		if err := store.CheckNamespaceName(o.Namespace); err != nil {
			return fmt.Errorf("%w: key for namespace: %w", ErrInvalid, err)
		}
	}
	for _, a := range o.Activities {
		if a == "" || strings.Contains(a, store.NamespaceSep) {
			return fmt.Errorf("%w: activity name %q: a granted name is not empty and holds no %q", ErrInvalid, a, store.NamespaceSep)
		}
	}
	return nil
}

// CreateKey mints a key: its secret, shown this once (only its digest is
// stored), and its record.
func (h *Host) CreateKey(ctx context.Context, o KeyOptions) (string, store.Key, error) {
	now := time.Now()
	if err := o.check(now); err != nil {
		return "", store.Key{}, fmt.Errorf("create key: %w", err)
	}
	if o.Namespace != "" {
		if _, err := h.cfg.Store.Namespace(ctx, o.Namespace); errors.Is(err, store.ErrNotFound) {
			return "", store.Key{}, invalidf("create key: no namespace %q (skein namespace create %s)", o.Namespace, o.Namespace)
		} else if err != nil {
			return "", store.Key{}, fmt.Errorf("create key: %w", err)
		}
	}
	for range 3 { // a taken id (48 random bits) is retried
		secret, digest, err := newSecret()
		if err != nil {
			return "", store.Key{}, fmt.Errorf("create key: %w", err)
		}
		id := randomHex(12) // crypto/rand, which does not fail
		k, err := h.cfg.Store.CreateKey(ctx, store.Key{ID: "k_" + id, Namespace: o.Namespace, Role: o.Role, Name: o.Name,
			Digest: digest, Activities: slices.Clone(o.Activities), CreatedAt: now, ExpiresAt: o.ExpiresAt})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return "", store.Key{}, fmt.Errorf("create key: %w", err)
		}
		h.log.Info("skein: API key created", "key", k.ID, "namespace", k.Namespace, "role", k.Role)
		return secret, k, nil
	}
	return "", store.Key{}, fmt.Errorf("create key: three random ids were taken: %w", store.ErrConflict)
}

// Keys lists the keys of namespace ns, or every key for "". Their
// digests are left out.
func (h *Host) Keys(ctx context.Context, ns string) ([]store.Key, error) {
	ks, err := h.cfg.Store.Keys(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	for i := range ks {
		ks[i].Digest = ""
	}
	return ks, nil
}

// key returns key id if it is in namespace ns ("" for any), or
// ErrNotFound: a key of another namespace is not shown.
func (h *Host) key(ctx context.Context, ns, id string) (store.Key, error) {
	ks, err := h.cfg.Store.Keys(ctx, ns)
	if err != nil {
		return store.Key{}, err
	}
	for _, k := range ks {
		if k.ID == id {
			return k, nil
		}
	}
	return store.Key{}, fmt.Errorf("key %s: %w", id, ErrNotFound)
}

// RevokeKey revokes key id of namespace ns ("" for any): its secret
// stops working at once.
func (h *Host) RevokeKey(ctx context.Context, ns, id string) (store.Key, error) {
	if _, err := h.key(ctx, ns, id); err != nil {
		return store.Key{}, fmt.Errorf("revoke key: %w", err)
	}
	k, err := h.cfg.Store.RevokeKey(ctx, id, time.Now())
	if err != nil {
		return store.Key{}, fmt.Errorf("revoke key %s: %w", id, err)
	}
	h.log.Info("skein: API key revoked", "key", k.ID, "namespace", k.Namespace)
	k.Digest = ""
	return k, nil
}

// RotateKey gives key id of namespace ns ("" for any) a new secret,
// returned this once; the old secret stops working at once.
func (h *Host) RotateKey(ctx context.Context, ns, id string) (string, store.Key, error) {
	if _, err := h.key(ctx, ns, id); err != nil {
		return "", store.Key{}, fmt.Errorf("rotate key: %w", err)
	}
	secret, digest, err := newSecret()
	if err != nil {
		return "", store.Key{}, fmt.Errorf("rotate key %s: %w", id, err)
	}
	k, err := h.cfg.Store.RotateKey(ctx, id, digest)
	if err != nil {
		return "", store.Key{}, fmt.Errorf("rotate key %s: %w", id, err)
	}
	h.log.Info("skein: API key rotated", "key", k.ID, "namespace", k.Namespace)
	k.Digest = ""
	return secret, k, nil
}

// Authenticate returns the key whose secret is secret, reading the store
// (no cache). An unknown secret is ErrKeyUnknown, a revoked key's
// ErrKeyRevoked, an expired key's ErrKeyExpired; each is an
// ErrUnauthenticated. It records the key's last use, at most once a
// minute.
func (h *Host) Authenticate(ctx context.Context, secret string) (store.Key, error) {
	if secret == "" {
		return store.Key{}, ErrKeyUnknown
	}
	k, err := h.cfg.Store.KeyByDigest(ctx, Digest(secret))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Key{}, ErrKeyUnknown
	case err != nil:
		return store.Key{}, fmt.Errorf("authenticate: %w", err)
	}
	now := time.Now()
	switch {
	case !k.RevokedAt.IsZero():
		return store.Key{}, fmt.Errorf("key %s: %w", k.ID, ErrKeyRevoked)
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return store.Key{}, fmt.Errorf("key %s: %w", k.ID, ErrKeyExpired)
	}
	if now.Sub(k.LastUsedAt) >= keyUseEvery && h.keyUse.due(k.ID, now) {
		if err := h.cfg.Store.TouchKey(ctx, k.ID, now); err != nil {
			h.log.Warn("skein: cannot record an API key's use", "key", k.ID, "err", err)
		}
	}
	k.Digest = ""
	return k, nil
}

// AnyKey reports whether any key is stored (revoked or not).
func (h *Host) AnyKey(ctx context.Context) (bool, error) {
	ok, err := h.cfg.Store.AnyKey(ctx)
	if err != nil {
		return false, fmt.Errorf("keys: %w", err)
	}
	return ok, nil
}

// Digest is the hex SHA-256 digest of a secret, as the store keeps it.
func Digest(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(d[:])
}

// newSecret returns a new secret, SecretPrefix and 32 random bytes, and
// its digest.
func newSecret() (secret, digest string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("random secret: %w", err)
	}
	secret = SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, Digest(secret), nil
}

// keyUse remembers when this process last wrote each key's use, so that
// requests that arrive together write it once. The zero value is ready.
type keyUse struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether key id's use should be written now, and if so
// notes it written.
func (u *keyUse) due(id string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if now.Sub(u.last[id]) < keyUseEvery {
		return false
	}
	if u.last == nil || len(u.last) > 10_000 {
		u.last = map[string]time.Time{} // forget; at worst one more write per key
	}
	u.last[id] = now
	return true
}

// KeyManager is what a server needs of a host to authenticate requests
// by API key and to manage keys; a *Host is one.
type KeyManager interface {
	CreateKey(ctx context.Context, o KeyOptions) (string, store.Key, error)
	Keys(ctx context.Context, ns string) ([]store.Key, error)
	RevokeKey(ctx context.Context, ns, id string) (store.Key, error)
	RotateKey(ctx context.Context, ns, id string) (string, store.Key, error)
	Authenticate(ctx context.Context, secret string) (store.Key, error)
	AnyKey(ctx context.Context) (bool, error)
}

var _ KeyManager = (*Host)(nil)
