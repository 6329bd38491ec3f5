package storetest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

func testKey(id, ns, role, digestChar string, created int64) store.Key {
	return store.Key{ID: id, Namespace: ns, Role: role, Name: "label " + id,
		Digest: strings.Repeat(digestChar, 64), CreatedAt: ts(created)}
}

// testKeys: a key is stored as given, found by its digest, listed by
// namespace (all for ""), and an id or a digest is stored once.
func testKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	if any, err := s.AnyKey(ctx); err != nil || any {
		t.Fatalf("AnyKey of an empty store = %v, %v; want false", any, err)
	}
	w := testKey("k_000000000001", "team-a", "worker", "a", 10)
	w.Activities = []string{"charge", "refund"}
	w.ExpiresAt = ts(100)
	for _, k := range []store.Key{w, testKey("k_000000000002", "team-b", "read", "b", 11),
		testKey("k_000000000003", "", "root", "c", 12), testKey("k_000000000004", "team-a", "admin", "d", 13)} {
		if _, err := s.CreateKey(ctx, k); err != nil {
			t.Fatalf("CreateKey(%s): %v", k.ID, err)
		}
	}
	if _, err := s.CreateKey(ctx, testKey("k_000000000001", "x", "read", "e", 14)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateKey of a stored id: %v, want ErrConflict", err)
	}
	if _, err := s.CreateKey(ctx, testKey("k_000000000009", "x", "read", "a", 14)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateKey of a stored digest: %v, want ErrConflict", err)
	}
	if any, err := s.AnyKey(ctx); err != nil || !any {
		t.Errorf("AnyKey = %v, %v; want true", any, err)
	}
	got, err := s.KeyByDigest(ctx, strings.Repeat("a", 64))
	if err != nil || !got.CreatedAt.Equal(w.CreatedAt) || !got.ExpiresAt.Equal(w.ExpiresAt) {
		t.Fatalf("KeyByDigest = %+v, %v; want %+v", got, err, w)
	}
	got.CreatedAt, got.ExpiresAt, w.CreatedAt, w.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("KeyByDigest:\n got  %+v\n want %+v", got, w)
	}
	if _, err := s.KeyByDigest(ctx, strings.Repeat("f", 64)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("KeyByDigest of an unknown digest: %v, want ErrNotFound", err)
	}
	for ns, want := range map[string][]string{"": {"k_000000000001", "k_000000000002", "k_000000000003", "k_000000000004"},
		"team-a": {"k_000000000001", "k_000000000004"}, "nobody": nil} {
		ks, err := s.Keys(ctx, ns)
		var ids []string
		for _, k := range ks {
			ids = append(ids, k.ID)
		}
		if err != nil || !reflect.DeepEqual(ids, want) {
			t.Errorf("Keys(%q) = %v, %v; want %v", ns, ids, err, want)
		}
	}
}

// testKeyRevokeRotate: a revocation is kept with its first time; a
// rotation replaces the digest (the old one finds nothing) and is
// refused on a revoked key; a touch records the last use.
func testKeyRevokeRotate(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, k := range []store.Key{testKey("k_00000000000a", "ns", "run", "a", 10), testKey("k_00000000000b", "ns", "run", "b", 11)} {
		if _, err := s.CreateKey(ctx, k); err != nil {
			t.Fatalf("CreateKey(%s): %v", k.ID, err)
		}
	}
	k, err := s.RotateKey(ctx, "k_00000000000a", strings.Repeat("c", 64))
	if err != nil || k.Digest != strings.Repeat("c", 64) || k.Role != "run" || k.Namespace != "ns" {
		t.Fatalf("RotateKey = %+v, %v", k, err)
	}
	if _, err := s.KeyByDigest(ctx, strings.Repeat("a", 64)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("KeyByDigest of the digest rotated away: %v, want ErrNotFound", err)
	}
	if k, err := s.KeyByDigest(ctx, strings.Repeat("c", 64)); err != nil || k.ID != "k_00000000000a" {
		t.Errorf("KeyByDigest of the new digest = %+v, %v", k, err)
	}
	if err := s.TouchKey(ctx, "k_00000000000a", ts(50)); err != nil {
		t.Fatalf("TouchKey: %v", err)
	}
	if k, err := s.KeyByDigest(ctx, strings.Repeat("c", 64)); err != nil || !k.LastUsedAt.Equal(ts(50)) {
		t.Errorf("after TouchKey: LastUsedAt %v, %v; want %v", k.LastUsedAt, err, ts(50))
	}
	k, err = s.RevokeKey(ctx, "k_00000000000b", ts(60))
	if err != nil || !k.RevokedAt.Equal(ts(60)) {
		t.Fatalf("RevokeKey = %+v, %v; want revoked at %v", k, err, ts(60))
	}
	if k, err := s.RevokeKey(ctx, "k_00000000000b", ts(70)); err != nil || !k.RevokedAt.Equal(ts(60)) {
		t.Errorf("a second RevokeKey = %v, %v; want the first time kept", k.RevokedAt, err)
	}
	if _, err := s.RotateKey(ctx, "k_00000000000b", strings.Repeat("d", 64)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("RotateKey of a revoked key: %v, want ErrConflict", err)
	}
	for name, err := range map[string]error{
		"RevokeKey": func() error { _, err := s.RevokeKey(ctx, "k_unknown", ts(1)); return err }(),
		"RotateKey": func() error { _, err := s.RotateKey(ctx, "k_unknown", strings.Repeat("e", 64)); return err }(),
		"TouchKey":  s.TouchKey(ctx, "k_unknown", ts(1)),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of an unknown key: %v, want ErrNotFound", name, err)
		}
	}
}
