package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// The API keys' endpoints (docs/api.md, "API keys"). An admin key
// manages the keys of its own namespace; a root key every key.
type (
	// KeyRequest is client.KeyRequest: the body of POST /v1/keys.
	KeyRequest = client.KeyRequest
	// Key is client.Key: a key as the API shows it.
	Key = client.Key
	// KeySecret is client.KeySecret: a key with its secret, shown once.
	KeySecret = client.KeySecret
	// KeyList is client.KeyList: GET /v1/keys.
	KeyList = client.KeyList
)

func (a *api) routeKeys(mux *http.ServeMux) {
	a.handle(mux, "POST /v1/keys", apiRoute, a.createKey)
	a.handle(mux, "GET /v1/keys", apiRoute, a.listKeys)
	a.handle(mux, "POST /v1/keys/{id}/revoke", apiRoute, a.revokeKey)
	a.handle(mux, "POST /v1/keys/{id}/rotate", apiRoute, a.rotateKey)
}

// keyManager returns the host's keys, or answers that this server has
// none (its host is not a host.KeyManager).
func (a *api) keyManager(w http.ResponseWriter, r *http.Request) (host.KeyManager, bool) {
	if a.keys == nil {
		a.fail(w, r, notFound("this server keeps no API keys (its host does not)"))
		return nil, false
	}
	return a.keys, true
}

// keyScope is the namespace whose keys the principal of r manages: ""
// (every key) for root, its own for admin.
func keyScope(r *http.Request) string {
	if p := principalOf(r); p.Role != RoleRoot {
		return p.Namespace
	}
	return ""
}

// createKey: POST /v1/keys.
func (a *api) createKey(w http.ResponseWriter, r *http.Request) {
	km, ok := a.keyManager(w, r)
	if !ok {
		return
	}
	var req KeyRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	o, err := keyOptions(r, req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	secret, k, err := km.CreateKey(r.Context(), o)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, KeySecret{Secret: secret, Key: keyJSON(k)})
}

// keyOptions are the options of a key request by the principal of r: an
// admin key may create keys of its own namespace only, and no root key.
func keyOptions(r *http.Request, req KeyRequest) (host.KeyOptions, error) {
	p := principalOf(r)
	o := host.KeyOptions{Namespace: req.Namespace, Role: req.Role, Name: req.Name, Activities: req.Activities}
	if o.Namespace == "" && o.Role != host.RoleRoot {
		ns, err := p.NamespaceFor(r)
		if err != nil {
			return o, err
		}
		o.Namespace = ns
	}
	if p.Role != RoleRoot {
		switch {
		case o.Role == host.RoleRoot:
			return o, forbidden("key %s (role %s) may not create a root key: only a root key may", p.KeyID, p.Role)
		case o.Namespace != p.Namespace:
			return o, forbidden("key %s manages the keys of namespace %q only, not %q", p.KeyID, p.Namespace, o.Namespace)
		}
	}
	if err := store.CheckNamespaceName(o.Namespace); o.Role != host.RoleRoot && err != nil {
		return o, badRequest("namespace: %v", err)
	}
	switch {
	case req.ExpiresIn != "" && req.ExpiresAt != nil:
		return o, badRequest("give expires_in or expires_at, not both")
	case req.ExpiresAt != nil:
		o.ExpiresAt = *req.ExpiresAt
	case req.ExpiresIn != "":
		d, err := ParseExpiry(req.ExpiresIn)
		if err != nil {
			return o, badRequest("expires_in: %v", err)
		}
		o.ExpiresAt = time.Now().Add(d)
	}
	return o, nil
}

// ParseExpiry parses a key's lifetime: a Go duration ("36h", "90m") or a
// number of days ("30d"); it must be positive.
func ParseExpiry(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (36h, 90m) or number of days (30d)", s)
	}
	return d, nil
}

// listKeys: GET /v1/keys. A root key lists every key, or one
// namespace's with X-Skein-Namespace.
func (a *api) listKeys(w http.ResponseWriter, r *http.Request) {
	km, ok := a.keyManager(w, r)
	if !ok {
		return
	}
	ns := keyScope(r)
	if ns == "" && r.Header.Get(NamespaceHeader) != "" {
		var err error
		if ns, err = principalOf(r).NamespaceFor(r); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	ks, err := km.Keys(r.Context(), ns)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := KeyList{Keys: make([]Key, 0, len(ks))}
	for _, k := range ks {
		out.Keys = append(out.Keys, keyJSON(k))
	}
	writeJSON(w, http.StatusOK, out)
}

// revokeKey: POST /v1/keys/{id}/revoke.
func (a *api) revokeKey(w http.ResponseWriter, r *http.Request) {
	km, ok := a.keyManager(w, r)
	if !ok {
		return
	}
	k, err := km.RevokeKey(r.Context(), keyScope(r), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, keyJSON(k))
}

// rotateKey: POST /v1/keys/{id}/rotate.
func (a *api) rotateKey(w http.ResponseWriter, r *http.Request) {
	km, ok := a.keyManager(w, r)
	if !ok {
		return
	}
	secret, k, err := km.RotateKey(r.Context(), keyScope(r), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, KeySecret{Secret: secret, Key: keyJSON(k)})
}

// keyJSON is k as the API shows it: no digest.
func keyJSON(k store.Key) Key {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	return Key{ID: k.ID, Namespace: k.Namespace, Role: k.Role, Name: k.Name, Activities: k.Activities,
		CreatedAt: k.CreatedAt.UTC(), ExpiresAt: opt(k.ExpiresAt), LastUsedAt: opt(k.LastUsedAt), RevokedAt: opt(k.RevokedAt)}
}
