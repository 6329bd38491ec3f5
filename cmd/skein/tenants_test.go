package main

import (
	"encoding/json"
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
		r := s.callNS(t, method, path, "", ns, body)
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

// TestNamespaceIsolation: through a real skein serve, two namespaces
// hold records of the same ids and names; every endpoint that names one
// of namespace a's records answers namespace b 404, and no answer to b
// holds any of a's ids, names or module hash.
func TestNamespaceIsolation(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "tenants.db"), nil)
	want(t, "a namespace not created", s.callNS(t, "GET", "/v1/runs", "", "a", nil), http.StatusNotFound, "not_found")
	for _, ns := range []string{"a", "b"} {
		want(t, "create namespace "+ns, s.call(t, "POST", "/v1/namespaces", "", map[string]any{"name": ns}), http.StatusCreated, "")
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
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/runs/r-a"}, {"GET", "/v1/runs/r-a/outcomes"}, {"GET", "/v1/runs/r-a/ops"},
		{"GET", "/v1/runs/r-a/leases"}, {"GET", "/v1/runs/r-a/tasks"},
		{"POST", "/v1/runs/r-a/cancel"}, {"POST", "/v1/runs/r-a/pause"}, {"POST", "/v1/runs/r-a/unpause"},
		{"POST", "/v1/runs/r-a/reset"}, {"DELETE", "/v1/runs/r-a"},
		{"POST", "/v1/promises/r-a.decision"}, {"GET", "/v1/modules/" + a.hash},
		{"GET", "/v1/schedules/s-a"}, {"POST", "/v1/schedules/s-a/pause"}, {"POST", "/v1/schedules/s-a/resume"},
		{"POST", "/v1/schedules/s-a/trigger"}, {"DELETE", "/v1/schedules/s-a"},
		{"GET", "/v1/hooks/h-a"}, {"DELETE", "/v1/hooks/h-a"}, {"POST", "/v1/hooks/h-a"}, {"POST", "/v1/namespaces/b/hooks/h-a"},
		{"GET", "/v1/batches/" + a.batch}, {"POST", "/v1/batches/" + a.batch + "/cancel"},
		{"DELETE", "/v1/attributes/ata"},
		{"GET", "/v1/runs/a%2Fr-a"}, {"GET", "/v1/schedules/a%2Fs-a"},
	} {
		var body any
		switch {
		case strings.HasSuffix(c.path, "/reset"):
			body = map[string]any{"to": "1"}
		case strings.HasPrefix(c.path, "/v1/promises/"):
			body = map[string]any{"value": map[string]any{"approved": true}}
		}
		r := s.callNS(t, c.method, c.path, "", "b", body)
		what := c.method + " " + c.path
		want(t, "b: "+what, r, http.StatusNotFound, "not_found")
		check(what, r)
	}
	for _, path := range []string{"/v1/runs", "/v1/runs?where=" + "status%20in%20(pending,running,suspended,completed)",
		"/v1/modules", "/v1/modules/m", "/v1/schedules", "/v1/hooks", "/v1/batches", "/v1/attributes",
		"/v1/runs/shared", "/v1/runs/shared/ops"} {
		r := s.callNS(t, "GET", path, "", "b", nil)
		want(t, "b: GET "+path, r, http.StatusOK, "")
		check("GET "+path, r)
	}
	if r := s.callNS(t, "GET", "/v1/runs/shared", "", "b", nil); !strings.Contains(string(r.body), b.hash) {
		t.Errorf("b: its run shared does not run its own module %s: %s", b.hash, r)
	}
	r := s.callNS(t, "POST", "/v1/runs/prune", "", "b", map[string]any{"older_than": "0s", "dry_run": true})
	want(t, "b: dry-run prune", r, http.StatusOK, "")
	check("POST /v1/runs/prune", r)
	// a's own records stay a's: what b asked changed none of them.
	if run := s.callNS(t, "GET", "/v1/runs/r-a", "", "a", nil); run.status != http.StatusOK || strings.Contains(string(run.body), `"paused"`) {
		t.Errorf("a: run r-a after b's requests: %s; want it there, unpaused", run)
	}
	want(t, "a: its schedule", s.callNS(t, "GET", "/v1/schedules/s-a", "", "a", nil), http.StatusOK, "")
	want(t, "a bad namespace header", s.callNS(t, "GET", "/v1/runs", "", "no/such", nil), http.StatusBadRequest, "bad_request")
}
