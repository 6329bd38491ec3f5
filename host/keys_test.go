package host

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// TestKeys: a key's secret works until the key is revoked, rotated or
// expired, each refused with its own error; the store never holds the
// secret; the last use is written at most once a minute.
func TestKeys(t *testing.T) {
	th := newTestHost(t, Config{})
	h, ctx := th.Host, t.Context()
	if _, _, err := h.CreateKey(ctx, KeyOptions{Namespace: "team-a", Role: RoleRun}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `no namespace "team-a"`) {
		t.Errorf("CreateKey of a namespace not created: %v; want ErrInvalid naming it", err)
	}
	if _, err := h.CreateNamespace(ctx, "team-a", NamespaceOptions{}); err != nil {
		t.Fatal(err)
	}
	secret, k, err := h.CreateKey(ctx, KeyOptions{Namespace: "team-a", Role: RoleRun, Name: "ci"})
	if err != nil || !strings.HasPrefix(secret, SecretPrefix) || !strings.HasPrefix(k.ID, "k_") || len(k.ID) != 14 {
		t.Fatalf("CreateKey = %q, %+v, %v", secret, k, err)
	}
	got, err := h.Authenticate(ctx, secret)
	if err != nil || got.ID != k.ID || got.Role != RoleRun || got.Namespace != "team-a" || got.Digest != "" {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	stored, err := h.cfg.Store.KeyByDigest(ctx, Digest(secret))
	if err != nil || stored.Digest == secret || stored.LastUsedAt.IsZero() {
		t.Errorf("stored key = %+v, %v; want a digest and a last use", stored, err)
	}
	first := stored.LastUsedAt
	if _, err := h.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if again, _ := h.cfg.Store.KeyByDigest(ctx, Digest(secret)); !again.LastUsedAt.Equal(first) {
		t.Errorf("a second use within a minute wrote the last use again: %v, then %v", first, again.LastUsedAt)
	}
	if _, err := h.Authenticate(ctx, "sk_nothing"); !errors.Is(err, ErrKeyUnknown) {
		t.Errorf("an unknown secret: %v, want ErrKeyUnknown", err)
	}
	newSecret, _, err := h.RotateKey(ctx, "team-a", k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Authenticate(ctx, secret); !errors.Is(err, ErrKeyUnknown) {
		t.Errorf("the secret rotated away: %v, want ErrKeyUnknown", err)
	}
	if _, err := h.RevokeKey(ctx, "team-b", k.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoking a key of another namespace: %v, want ErrNotFound", err)
	}
	if _, err := h.RevokeKey(ctx, "", k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Authenticate(ctx, newSecret); !errors.Is(err, ErrKeyRevoked) || !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a revoked key: %v, want ErrKeyRevoked", err)
	}
	// An expiry in the past, as if time passed: CreateKey refuses one.
	exp := SecretPrefix + "expired"
	if _, err := h.cfg.Store.CreateKey(ctx, store.Key{ID: "k_000000000001", Namespace: "team-a", Role: RoleRead,
		Digest: Digest(exp), ExpiresAt: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Authenticate(ctx, exp); !errors.Is(err, ErrKeyExpired) {
		t.Errorf("an expired key: %v, want ErrKeyExpired", err)
	}
}

// TestKeyOptions: the rules of a new key.
func TestKeyOptions(t *testing.T) {
	th := newTestHost(t, Config{})
	for name, o := range map[string]KeyOptions{
		"unknown role":               {Namespace: "a", Role: "owner"},
		"root with a namespace":      {Namespace: "a", Role: RoleRoot},
		"no namespace":               {Role: RoleRead},
		"bad namespace":              {Namespace: "1a", Role: RoleRead},
		"expired":                    {Namespace: "a", Role: RoleRead, ExpiresAt: time.Now().Add(-time.Second)},
		"activities of a non-worker": {Namespace: "a", Role: RoleRun, Activities: []string{"x"}},
		"qualified activity":         {Namespace: "a", Role: RoleWorker, Activities: []string{"b/x"}},
	} {
		if _, _, err := th.Host.CreateKey(t.Context(), o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, k, err := th.Host.CreateKey(t.Context(), KeyOptions{Role: RoleRoot}); err != nil || k.Namespace != "" {
		t.Errorf("a root key: %+v, %v", k, err)
	}
}

// TestNamespaceKeysKeep: a namespace with a key that works is not
// deleted; once the key is revoked it is.
func TestNamespaceKeysKeep(t *testing.T) {
	h, ctx := newTestHost(t, Config{}).Host, t.Context()
	if _, err := h.CreateNamespace(ctx, "gone", NamespaceOptions{}); err != nil {
		t.Fatal(err)
	}
	_, k, err := h.CreateKey(ctx, KeyOptions{Namespace: "gone", Role: RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	var inUse *store.NamespaceInUseError
	if err := h.DeleteNamespace(ctx, "gone"); !errors.As(err, &inUse) || inUse.Holds.Keys != 1 {
		t.Fatalf("DeleteNamespace with a live key: %v; want in use, 1 API key", err)
	}
	if _, err := h.RevokeKey(ctx, "gone", k.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteNamespace(ctx, "gone"); err != nil {
		t.Errorf("DeleteNamespace once its key is revoked: %v", err)
	}
}
