package server

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host"
)

// TestRouteRolesCoverRoutes: every registered route has its least role
// in routeRoles, and every entry is a registered route.
func TestRouteRolesCoverRoutes(t *testing.T) {
	a, _ := newAPI(newTestAPI(t, Options{}).hs, Options{})
	for p := range a.routes {
		if _, ok := routeRoles[p]; !ok {
			t.Errorf("route %q is registered without an entry in routeRoles (server/roles.go): say which role may call it", p)
		}
	}
	for p := range routeRoles {
		if _, ok := a.routes[p]; !ok {
			t.Errorf("routeRoles (server/roles.go) has %q, which is not a registered route", p)
		}
	}
}

// TestRoleMatrix: every route under /v1/ and /metrics, called with a key
// of every role, is refused with 403 exactly when routeRoles says the
// role may not call it; the 403 names the role needed and the key's.
func TestRoleMatrix(t *testing.T) {
	ta := newTestAPI(t, Options{})
	secrets := map[Role]string{}
	for _, role := range host.KeyRoles {
		o := host.KeyOptions{Namespace: "default", Role: role}
		if role == host.RoleRoot {
			o.Namespace = ""
		}
		secret, _, err := ta.hs.CreateKey(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		secrets[Role(role)] = secret
	}
	a, _ := newAPI(ta.hs, Options{})
	for _, pattern := range slices.Sorted(maps.Keys(a.routes)) {
		if pattern == "GET /{$}" || pattern == "GET /ui/" || a.routes[pattern].public {
			continue // the UI's files and webhook deliveries need no key
		}
		method, path, _ := strings.Cut(pattern, " ")
		path = strings.NewReplacer("{id}", "x", "{name}", "x", "{ref}", "x").Replace(path)
		for role, secret := range secrets {
			req := newRequest(method, path, strings.NewReader(""))
			req.Header.Set("Authorization", "Bearer "+secret)
			rec := httptest.NewRecorder()
			ta.h.ServeHTTP(rec, req)
			body := rec.Body.String()
			if want := allows(role, pattern); want != (rec.Code != http.StatusForbidden) {
				t.Errorf("%s as %s: %d %s; want 403: %v", pattern, role, rec.Code, strings.TrimSpace(body), !want)
			} else if !want && (!strings.Contains(body, "needs role "+string(needs(pattern))) || !strings.Contains(body, "has role "+string(role))) {
				t.Errorf("%s as %s: the 403 %s does not name the role needed and the key's", pattern, role, body)
			}
			if rec.Code == http.StatusUnauthorized {
				t.Errorf("%s as %s: 401 %s", pattern, role, body)
			}
		}
	}
}

// TestRoleOrder: the order read < run < deploy < admin < root, worker
// apart but included in admin.
func TestRoleOrder(t *testing.T) {
	for _, c := range []struct {
		role    Role
		pattern string
		ok      bool
	}{
		{RoleRead, "GET /v1/runs", true}, {RoleRead, "POST /v1/runs", false},
		{RoleRun, "POST /v1/runs", true}, {RoleRun, "POST /v1/modules", false},
		{RoleDeploy, "POST /v1/modules", true}, {RoleDeploy, "POST /v1/runs", true}, {RoleDeploy, "POST /v1/keys", false},
		{RoleAdmin, "POST /v1/keys", true}, {RoleAdmin, "POST /v1/tasks/claim", true}, {RoleAdmin, "POST /v1/namespaces", false},
		{RoleWorker, "POST /v1/tasks/claim", true}, {RoleWorker, "GET /v1/runs/{id}/tasks", true},
		{RoleWorker, "GET /v1/runs", false}, {RoleWorker, "POST /v1/runs", false},
		{RoleRead, "POST /v1/tasks/claim", false}, {RoleDeploy, "POST /v1/tasks/claim", false},
		{RoleRoot, "POST /v1/namespaces", true}, {"", "GET /v1/runs", false},
	} {
		if got := allows(c.role, c.pattern); got != c.ok {
			t.Errorf("allows(%q, %q) = %v, want %v", c.role, c.pattern, got, c.ok)
		}
	}
}
