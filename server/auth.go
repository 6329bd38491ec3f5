package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/skeinrun/skein/host"
)

// Who a request acts as (guard.go, step 3):
//
//   - "Authorization: Bearer TOKEN" with Options.Token: root.
//   - a bearer that is a stored key's secret (host.Authenticate, one read
//     of the store per request, no cache): the key's role and namespace.
//     A revoked, rotated or expired key is refused on its next request.
//   - no Options.Token and no key stored (the local dev server): root,
//     whatever the request sends, as before keys existed.
//
// Anything else is a 401, the same whatever was wrong with the key.
// Once a key is stored, a server without --token requires keys (RATIONALE.md).

// errNoCredential and errBadCredential are the 401s.
var (
	errNoCredential  = errors.New("missing bearer token: send Authorization: Bearer TOKEN")
	errBadCredential = errors.New("wrong token in the Authorization header")
)

// rootPrincipal is the principal of --token and of the open dev server.
var rootPrincipal = Principal{Name: "root", Role: RoleRoot}

// authenticate returns the principal of r. want is the digest of
// "Bearer " + Options.Token; it is compared in constant time.
func (a *api) authenticate(r *http.Request, want [sha256.Size]byte) (Principal, error) {
	auth := r.Header.Get("Authorization")
	if a.o.Token != "" {
		got := sha256.Sum256([]byte(auth))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			return rootPrincipal, nil
		}
	}
	secret, isBearer := strings.CutPrefix(auth, "Bearer ")
	if a.keys != nil && isBearer && strings.HasPrefix(secret, host.SecretPrefix) {
		k, err := a.keys.Authenticate(r.Context(), secret)
		if err == nil {
			return Principal{KeyID: k.ID, Name: k.Name, Namespace: k.Namespace, Role: Role(k.Role), Activities: k.Activities}, nil
		}
		if !errors.Is(err, host.ErrUnauthenticated) {
			return Principal{}, err // the store failed: not the client's fault
		}
		if a.o.Token != "" || a.keysRequired(r) {
			a.log.Debug("skein api: a key was refused", "path", r.URL.Path, "err", err)
			return Principal{}, errBadCredential
		}
		return rootPrincipal, nil
	}
	switch {
	case a.o.Token == "" && !a.keysRequired(r):
		return rootPrincipal, nil
	case auth == "":
		return Principal{}, errNoCredential
	}
	return Principal{}, errBadCredential
}

// keysRequired reports whether a server without a token requires keys:
// once any key is stored (revoked or not). A store that cannot answer
// requires them: fail closed.
func (a *api) keysRequired(r *http.Request) bool {
	if a.keys == nil {
		return false
	}
	any, err := a.keys.AnyKey(r.Context())
	if err != nil {
		a.log.Warn("skein api: cannot tell whether API keys exist; refusing requests without one", "err", err)
		return true
	}
	return any
}

// refuseAuth answers an authentication failure: 401 for a credential,
// the store's error for a store that failed.
func (a *api) refuseAuth(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errNoCredential) || errors.Is(err, errBadCredential) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="skein"`)
		refuse(w, http.StatusUnauthorized, CodeUnauthorized, err.Error())
		return
	}
	a.fail(w, r, err)
}
