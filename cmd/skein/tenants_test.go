package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// tenant is what a test namespace holds: its module's hash and the ids
// and names of its records, each unique to it, so that an answer to
// another namespace that holds one of them is a leak.
type tenant struct {
	ns, hash, batch string
	ids             []string // run ids, schedule, hook and attribute names
}

// seedTenant fills namespace ns of s with a module named "m" (built from
// pkg), a waiting run r-NS, a run "shared" (an id both namespaces use),
// a schedule, a hook, an attribute and a batch.
func seedTenant(t *testing.T, s *skeinServer, ns, pkg string) tenant {
	t.Helper()
	wasm, err := os.ReadFile(wasmbuild.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	call := func(what, method, path string, body any, status int) reply {
		t.Helper()
		r := s.callNS(t, method, path, tenantRoot, ns, body)
		want(t, ns+": "+what, r, status, "")
		return r
	}
	m := decodeJSON[apiModule](t, "deploy", call("deploy", "POST", "/v1/modules?name=m", wasm, http.StatusCreated).body)
	wf := m.Workflows[0]
	tn := tenant{ns: ns, hash: m.Hash, ids: []string{"r-" + ns, "s-" + ns, "h-" + ns, "at" + ns}}
	call("start", "POST", "/v1/runs", map[string]any{"module": "m", "workflow": wf, "id": "r-" + ns, "input": map[string]any{"request": "x"}}, http.StatusCreated)
	call("start shared", "POST", "/v1/runs", map[string]any{"module": "m", "workflow": wf, "id": "shared", "input": map[string]any{"request": "x"}}, http.StatusCreated)
	call("schedule", "POST", "/v1/schedules", map[string]any{"name": "s-" + ns, "cron": "@yearly", "module": "m", "workflow": wf}, http.StatusCreated)
	call("hook", "POST", "/v1/hooks", map[string]any{"name": "h-" + ns, "module": "m", "workflow": wf}, http.StatusCreated)
	call("attribute", "POST", "/v1/attributes", map[string]any{"name": "at" + ns, "type": "int"}, http.StatusCreated)
	var b struct{ ID string }
	if err := json.Unmarshal(call("batch", "POST", "/v1/batches",
		map[string]any{"where": "status = failed", "action": "cancel"}, http.StatusAccepted).body, &b); err != nil || b.ID == "" {
		t.Fatalf("%s: batch: %v, id %q", ns, err, b.ID)
	}
	tn.batch = b.ID
	return tn
}

// tenantRoot is the root token of the isolation test's server.
const tenantRoot = "tenant-root"

// isolationCase is one request naming a record of namespace a, with the
// least role that may make it (server/roles.go; "" for a public route).
type isolationCase struct{ method, path, role string }

// isolationCases are every endpoint that names one record, each naming
// one of namespace a's.
func isolationCases(a tenant) []isolationCase {
	return []isolationCase{
		{"GET", "/v1/runs/r-a", "read"}, {"GET", "/v1/runs/r-a/outcomes", "read"}, {"GET", "/v1/runs/r-a/ops", "read"},
		{"GET", "/v1/runs/r-a/leases", "read"}, {"GET", "/v1/runs/r-a/tasks", "read"},
		{"POST", "/v1/runs/r-a/cancel", "run"}, {"POST", "/v1/runs/r-a/pause", "run"}, {"POST", "/v1/runs/r-a/unpause", "run"},
		{"POST", "/v1/runs/r-a/reset", "run"}, {"DELETE", "/v1/runs/r-a", "admin"},
		{"POST", "/v1/promises/r-a.decision", "run"}, {"GET", "/v1/modules/" + a.hash, "read"},
		{"GET", "/v1/schedules/s-a", "read"}, {"POST", "/v1/schedules/s-a/pause", "deploy"}, {"POST", "/v1/schedules/s-a/resume", "deploy"},
		{"POST", "/v1/schedules/s-a/trigger", "deploy"}, {"DELETE", "/v1/schedules/s-a", "deploy"},
		{"GET", "/v1/hooks/h-a", "read"}, {"DELETE", "/v1/hooks/h-a", "deploy"}, {"POST", "/v1/hooks/h-a", ""}, {"POST", "/v1/namespaces/b/hooks/h-a", ""},
		{"GET", "/v1/batches/" + a.batch, "read"}, {"POST", "/v1/batches/" + a.batch + "/cancel", "admin"},
		{"DELETE", "/v1/attributes/ata", "deploy"}, {"GET", "/v1/namespaces/a", "read"},
		{"GET", "/v1/runs/a%2Fr-a", "read"}, {"GET", "/v1/schedules/a%2Fs-a", "read"},
	}
}

// allowed reports whether a key of role may make a request whose least
// role is need (server/roles.go's order; worker apart).
func allowed(role, need string) bool {
	rank := map[string]int{"read": 1, "run": 2, "deploy": 3, "admin": 4}
	switch {
	case need == "":
		return true
	case role == "worker":
		return false // a worker key reads a run's tasks only (checkIsolationCase)
	}
	return rank[role] >= rank[need]
}

// TestNamespaceIsolation: through a real skein serve, two namespaces
// hold records of the same ids and names. For every endpoint that names
// one of namespace a's records, and every role: a key of namespace b
// gets 404 (or 403 where its role may not call the route), never a's
// record; the same key naming namespace a gets 403; no key gets 401. No
// answer to b holds any of a's ids, names or module hash, nor does any
// list b reads, nor b's /metrics.
func TestNamespaceIsolation(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "tenants.db"), []string{"SKEIN_TOKEN=" + tenantRoot})
	want(t, "a namespace not created", s.callNS(t, "GET", "/v1/runs", tenantRoot, "a", nil), http.StatusNotFound, "not_found")
	for _, ns := range []string{"a", "b"} {
		want(t, "create namespace "+ns, s.call(t, "POST", "/v1/namespaces", tenantRoot, map[string]any{"name": ns}), http.StatusCreated, "")
	}
	a := seedTenant(t, s, "a", "./examples/approval")
	b := seedTenant(t, s, "b", "./examples/attrs")
	leaks := append([]string{a.hash, a.batch}, a.ids...)
	// check fails when r holds one of a's ids or names that what (the
	// request) does not name itself: a 404 repeats the id asked for.
	check := func(what string, r reply) {
		t.Helper()
		for _, x := range leaks {
			if strings.Contains(string(r.body), x) && !strings.Contains(what, x) {
				t.Errorf("b: %s: the answer holds %q, namespace a's: %s", what, x, r)
			}
		}
	}
	keys := map[string]string{}
	for _, role := range []string{"read", "run", "deploy", "worker", "admin"} {
		keys[role] = mintTenantKey(t, s, "b", role)
	}
	for _, c := range isolationCases(a) {
		checkIsolationCase(t, s, c, keys, check)
	}
	checkListsScoped(t, s, keys["admin"], b, check)
	// a's own records stay a's: what b asked changed none of them.
	if run := s.callNS(t, "GET", "/v1/runs/r-a", tenantRoot, "a", nil); run.status != http.StatusOK || strings.Contains(string(run.body), `"paused"`) {
		t.Errorf("a: run r-a after b's requests: %s; want it there, unpaused", run)
	}
	want(t, "a: its schedule", s.callNS(t, "GET", "/v1/schedules/s-a", tenantRoot, "a", nil), http.StatusOK, "")
	want(t, "a bad namespace header", s.callNS(t, "GET", "/v1/runs", tenantRoot, "no/such", nil), http.StatusBadRequest, "bad_request")
	checkMetricsScoped(t, s, keys["read"], leaks)
}

// checkIsolationCase makes request c with each of b's keys, with b's
// keys naming namespace a, and with no key, and checks each answer.
func checkIsolationCase(t *testing.T, s *skeinServer, c isolationCase, keys map[string]string, check func(string, reply)) {
	t.Helper()
	var body any
	switch {
	case strings.HasSuffix(c.path, "/reset"):
		body = map[string]any{"to": "1"}
	case strings.HasPrefix(c.path, "/v1/promises/"):
		body = map[string]any{"value": map[string]any{"approved": true}}
	}
	what := c.method + " " + c.path
	for role, key := range keys {
		r := s.callNS(t, c.method, c.path, key, "", body)
		ok := allowed(role, c.role) || role == "worker" && strings.HasSuffix(c.path, "/tasks")
		if ok {
			want(t, "b's "+role+" key: "+what, r, http.StatusNotFound, "not_found")
		} else {
			want(t, "b's "+role+" key: "+what, r, http.StatusForbidden, "forbidden")
		}
		check(what, r)
		if c.role != "" {
			want(t, "b's "+role+" key naming namespace a: "+what, s.callNS(t, c.method, c.path, key, "a", body), http.StatusForbidden, "forbidden")
		}
	}
	if c.role != "" {
		want(t, "no key: "+what, s.callNS(t, c.method, c.path, "", "", body), http.StatusUnauthorized, "unauthorized")
	}
}

// mintTenantKey creates a key of namespace ns and role through the API.
func mintTenantKey(t *testing.T, s *skeinServer, ns, role string) string {
	t.Helper()
	r := s.call(t, "POST", "/v1/keys", tenantRoot, map[string]any{"namespace": ns, "role": role})
	want(t, "a "+role+" key of "+ns, r, http.StatusCreated, "")
	var k struct{ Secret string }
	if err := json.Unmarshal(r.body, &k); err != nil || k.Secret == "" {
		t.Fatalf("a %s key of %s: %v %s", role, ns, err, r)
	}
	return k.Secret
}

// checkListsScoped: every list b's key reads holds b's records only.
func checkListsScoped(t *testing.T, s *skeinServer, key string, b tenant, check func(string, reply)) {
	t.Helper()
	for _, path := range []string{"/v1/runs", "/v1/runs?where=" + "status%20in%20(pending,running,suspended,completed)",
		"/v1/modules", "/v1/modules/m", "/v1/schedules", "/v1/hooks", "/v1/batches", "/v1/attributes",
		"/v1/runs/shared", "/v1/runs/shared/ops", "/v1/namespaces", "/v1/keys"} {
		r := s.callNS(t, "GET", path, key, "", nil)
		want(t, "b: GET "+path, r, http.StatusOK, "")
		check("GET "+path, r)
		if path == "/v1/namespaces" && strings.Contains(string(r.body), `"name":"a"`) {
			t.Errorf("b's admin lists namespace a: %s", r)
		}
	}
	if r := s.callNS(t, "GET", "/v1/runs/shared", key, "", nil); !strings.Contains(string(r.body), b.hash) {
		t.Errorf("b: its run shared does not run its own module %s: %s", b.hash, r)
	}
	r := s.callNS(t, "POST", "/v1/runs/prune", key, "", map[string]any{"older_than": "0s", "dry_run": true})
	want(t, "b: dry-run prune", r, http.StatusOK, "")
	check("POST /v1/runs/prune", r)
}

// checkMetricsScoped: /metrics to a key of namespace b has b's series,
// none of a's or the server's; to the root token it has both.
func checkMetricsScoped(t *testing.T, s *skeinServer, keyB string, leaks []string) {
	t.Helper()
	get := func(key string) string {
		req, err := http.NewRequest("GET", s.url+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
		}
		return string(body)
	}
	b, all := get(keyB), get(tenantRoot)
	for _, x := range append(leaks, `namespace="a"`, "skein_store_commit_seconds") {
		if strings.Contains(b, x) {
			t.Errorf("b's /metrics holds %q", x)
		}
	}
	for _, x := range []string{`namespace="a"`, `namespace="b"`, "skein_store_commit_seconds"} {
		if !strings.Contains(all, x) {
			t.Errorf("/metrics to root lacks %q", x)
		}
	}
	if !strings.Contains(b, `namespace="b"`) {
		t.Error(`b's /metrics has no series of namespace="b"`)
	}
}
