package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host"
)

// keyed is a test API whose requests carry a bearer.
func (ta *testAPI) as(secret, method, path string, body any, hdr ...string) answer {
	ta.t.Helper()
	return ta.do(method, path, body, append([]string{"Authorization", "Bearer " + secret}, hdr...)...)
}

func (ta *testAPI) mint(o host.KeyOptions) string {
	ta.t.Helper()
	secret, _, err := ta.hs.CreateKey(ta.t.Context(), o)
	if err != nil {
		ta.t.Fatal(err)
	}
	return secret
}

// TestKeysAPI: an admin key manages the keys of its own namespace only
// and mints no root key; a root key mints any; a secret is answered once
// and never listed; a revoked or rotated secret is refused (401) on the
// next request.
func TestKeysAPI(t *testing.T) {
	ta := newTestAPI(t, Options{Token: "tok"})
	admin := ta.mint(host.KeyOptions{Namespace: "team-a", Role: host.RoleAdmin})
	ta.want("admin mints root", ta.as(admin, "POST", "/v1/keys", `{"role":"root"}`), 403, CodeForbidden)
	ta.want("admin mints another namespace's", ta.as(admin, "POST", "/v1/keys", `{"namespace":"team-b","role":"read"}`), 403, CodeForbidden)
	ta.want("a bad namespace", ta.as("tok", "POST", "/v1/keys", `{"namespace":"1x","role":"read"}`), 400, CodeBadRequest)
	ta.want("both expiries", ta.as("tok", "POST", "/v1/keys", `{"namespace":"a","role":"read","expires_in":"1h","expires_at":"2099-01-01T00:00:00Z"}`), 400, CodeBadRequest)
	a := ta.as(admin, "POST", "/v1/keys", `{"role":"run","name":"ci","expires_in":"30d"}`)
	ta.want("admin mints its namespace's", a, 201, "")
	var ks KeySecret
	if err := json.Unmarshal(a.body, &ks); err != nil || !strings.HasPrefix(ks.Secret, "sk_") || ks.Key.Namespace != "team-a" || ks.Key.ExpiresAt == nil {
		t.Fatalf("POST /v1/keys = %s (%v)", a, err)
	}
	ta.want("the new key", ta.as(ks.Secret, "GET", "/v1/runs", nil), 200, "")
	ta.want("the new key's role", ta.as(ks.Secret, "POST", "/v1/keys", `{"role":"read"}`), 403, CodeForbidden)
	ta.want("root mints another namespace's", ta.as("tok", "POST", "/v1/keys", `{"namespace":"team-b","role":"admin"}`), 201, "")

	list := ta.as(admin, "GET", "/v1/keys", nil)
	var kl KeyList
	if err := json.Unmarshal(list.body, &kl); err != nil || len(kl.Keys) != 2 || strings.Contains(string(list.body), "sk_") {
		t.Errorf("admin's GET /v1/keys = %s (%v); want its namespace's 2 keys, no secret", list, err)
	}
	if all := ta.as("tok", "GET", "/v1/keys", nil); json.Unmarshal(all.body, &kl) != nil || len(kl.Keys) != 3 {
		t.Errorf("root's GET /v1/keys = %s; want 3 keys", all)
	}

	rot := ta.as(admin, "POST", "/v1/keys/"+ks.Key.ID+"/rotate", "")
	var rs KeySecret
	if err := json.Unmarshal(rot.body, &rs); rot.code != 200 || err != nil || rs.Secret == ks.Secret || rs.Key.ID != ks.Key.ID {
		t.Fatalf("rotate = %s", rot)
	}
	ta.want("the rotated secret", ta.as(ks.Secret, "GET", "/v1/runs", nil), 401, CodeUnauthorized)
	ta.want("the new secret", ta.as(rs.Secret, "GET", "/v1/runs", nil), 200, "")
	ta.want("revoke", ta.as(admin, "POST", "/v1/keys/"+ks.Key.ID+"/revoke", ""), 200, "")
	ta.want("the revoked key", ta.as(rs.Secret, "GET", "/v1/runs", nil), 401, CodeUnauthorized)
	ta.want("an unknown key", ta.as("sk_unknown", "GET", "/v1/runs", nil), 401, CodeUnauthorized)
	// The three refusals say the same.
	if r, u := ta.as(rs.Secret, "GET", "/v1/runs", nil), ta.as("sk_unknown", "GET", "/v1/runs", nil); string(r.body) != string(u.body) {
		t.Errorf("a revoked key's 401 %s differs from an unknown key's %s", r, u)
	}

	ta.want("admin names another namespace", ta.as(admin, "GET", "/v1/keys", nil, NamespaceHeader, "team-b"), 403, CodeForbidden)
	ta.want("admin names its own", ta.as(admin, "GET", "/v1/keys", nil, NamespaceHeader, "team-a"), 200, "")
	other := ta.mint(host.KeyOptions{Namespace: "team-b", Role: host.RoleAdmin})
	_, own, _ := ta.hs.CreateKey(t.Context(), host.KeyOptions{Namespace: "team-a", Role: host.RoleRead})
	ta.want("revoke another namespace's key", ta.as(other, "POST", "/v1/keys/"+own.ID+"/revoke", ""), 404, CodeNotFound)
}

// TestNamespaceFor: a root principal acts in the namespace its header
// names (default "default"); any other in its key's, and a header naming
// another is a 403.
func TestNamespaceFor(t *testing.T) {
	root, key := rootPrincipal, Principal{KeyID: "k_1", Namespace: "team-a", Role: RoleRun}
	for _, c := range []struct {
		p      Principal
		header string
		want   string
		status int
	}{
		{root, "", "default", 0}, {root, "team-b", "team-b", 0}, {root, "1bad", "", 400},
		{key, "", "team-a", 0}, {key, "team-a", "team-a", 0}, {key, "team-b", "", 403}, {Principal{}, "", "", 403},
	} {
		r := httptest.NewRequest("GET", "/v1/runs", nil)
		if c.header != "" {
			r.Header.Set(NamespaceHeader, c.header)
		}
		ns, err := c.p.NamespaceFor(r)
		status := 0
		if re, ok := err.(*requestError); ok {
			status = re.status
		} else if err != nil {
			status = -1
		}
		if ns != c.want || status != c.status {
			t.Errorf("%+v with header %q: %q, %v; want %q, status %d", c.p, c.header, ns, err, c.want, c.status)
		}
	}
}

// TestNoTokenServer: a server without a token is open (root) until a key
// is stored; then every request needs a key, even once all are revoked.
func TestNoTokenServer(t *testing.T) {
	ta := newTestAPI(t, Options{})
	ta.want("no key stored", ta.do("GET", "/v1/runs", nil), 200, "")
	ta.want("no key stored, any bearer", ta.as("sk_whatever", "GET", "/v1/runs", nil), 200, "")
	_, k, err := ta.hs.CreateKey(t.Context(), host.KeyOptions{Namespace: "a", Role: host.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	ta.want("a key stored, none sent", ta.do("GET", "/v1/runs", nil), 401, CodeUnauthorized)
	if _, err := ta.hs.RevokeKey(t.Context(), "", k.ID); err != nil {
		t.Fatal(err)
	}
	ta.want("every key revoked, none sent", ta.do("GET", "/v1/runs", nil), 401, CodeUnauthorized)
}

// TestWorkerKeyGrants: a worker key granted some activity names claims
// tasks of those only (403 for another), and may not start runs.
func TestWorkerKeyGrants(t *testing.T) {
	ta := newTestAPI(t, Options{Token: "tok"})
	w := ta.mint(host.KeyOptions{Namespace: "default", Role: host.RoleWorker, Activities: []string{"charge"}})
	ta.want("a granted name", ta.as(w, "POST", "/v1/tasks/claim", `{"worker":"w1","names":["charge"],"max":1}`), 200, "")
	ta.want("another name", ta.as(w, "POST", "/v1/tasks/claim", `{"worker":"w1","names":["charge","refund"],"max":1}`), 403, CodeForbidden)
	ta.want("a start", ta.as(w, "POST", "/v1/runs", `{"module":"m"}`), 403, CodeForbidden)
	rec := httptest.NewRecorder()
	req := newRequest("GET", "/v1/runs", nil)
	req.Header.Set("Authorization", "Bearer "+w)
	ta.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "needs role read") {
		t.Errorf("a worker key lists runs: %d %s", rec.Code, rec.Body)
	}
}
