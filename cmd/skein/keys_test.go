package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/client"
)

// keyCLI runs `skein key ARGS` against s as the bearer token and
// returns its result.
func keyCLI(t *testing.T, s *skeinServer, token string, args ...string) result {
	t.Helper()
	return skein(t, "", append(append([]string{"key"}, args...), "--server", s.url, "--token", token)...)
}

// mintKey creates a key with the CLI and returns its secret (stdout) and
// its id.
func mintKey(t *testing.T, s *skeinServer, token string, args ...string) (string, string) {
	t.Helper()
	r := keyCLI(t, s, token, append([]string{"create"}, args...)...)
	secret := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(secret, "sk_") || !strings.Contains(r.stderr, "shown this once") {
		t.Fatalf("%s", r)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(r.stderr, "key "), " ")
	return secret, id
}

func (s *skeinServer) as(t *testing.T, secret, method, path string, body string) reply {
	t.Helper()
	hdr := map[string]string{"Authorization": "Bearer " + secret}
	if method == "POST" {
		hdr["Content-Type"] = "application/json"
	}
	return s.send(t, method, path, hdr, []byte(body))
}

// TestKeysThroughServe: keys of each role made with `skein key create`
// against a real skein serve --token; each role is allowed what its
// role allows; a revoked key, an expired key and a rotated key's old
// secret get 401 on the very next request, the new secret works; and no
// secret is ever in the database (its file and write-ahead log) or the
// server's log.
func TestKeysThroughServe(t *testing.T) {
	db := filepath.Join(t.TempDir(), "skein.db")
	s := startServer(t, db, nil, "--token", "root-token", "--log-level", "debug")
	var secrets []string
	keys := map[string]string{}
	for _, role := range []string{"read", "run", "deploy", "worker", "admin"} {
		secret, _ := mintKey(t, s, "root-token", "--namespace", "default", "--role", role, "--name", role+" key")
		keys[role] = secret
		secrets = append(secrets, secret)
	}
	rootKey, _ := mintKey(t, s, "root-token", "--role", "root")
	keys["root"] = rootKey
	secrets = append(secrets, rootKey)
	for role, want := range map[string][2]int{ // GET /v1/runs, POST /v1/runs of no module
		"read": {200, 403}, "run": {200, 404}, "deploy": {200, 404}, "worker": {403, 403}, "admin": {200, 404}, "root": {200, 404},
	} {
		if got := s.as(t, keys[role], "GET", "/v1/runs", "").status; got != want[0] {
			t.Errorf("GET /v1/runs as %s: %d, want %d", role, got, want[0])
		}
		if got := s.as(t, keys[role], "POST", "/v1/runs", `{"module":"nothing"}`); got.status != want[1] {
			t.Errorf("POST /v1/runs as %s: %d %s, want %d", role, got.status, got.body, want[1])
		}
	}
	if r := s.as(t, keys["worker"], "POST", "/v1/tasks/claim", `{"worker":"w","names":["echo"],"max":1}`); r.status != 200 {
		t.Errorf("a worker key's claim: %d %s", r.status, r.body)
	}

	// Revoked: refused on the next request.
	victim, id := mintKey(t, s, keys["admin"], "--namespace", "default", "--role", "read")
	secrets = append(secrets, victim)
	if r := s.as(t, victim, "GET", "/v1/runs", ""); r.status != 200 {
		t.Fatalf("a new key: %d %s", r.status, r.body)
	}
	if r := keyCLI(t, s, keys["admin"], "revoke", id); r.code != 0 {
		t.Fatalf("%s", r)
	}
	if r := s.as(t, victim, "GET", "/v1/runs", ""); r.status != 401 {
		t.Errorf("a revoked key's next request: %d %s, want 401", r.status, r.body)
	}

	// Rotated: the old secret is refused at once, the new one works.
	old, id := mintKey(t, s, "root-token", "--namespace", "default", "--role", "run")
	r := keyCLI(t, s, "root-token", "rotate", id)
	fresh := strings.TrimSpace(r.stdout)
	secrets = append(secrets, old, fresh)
	if r.code != 0 || !strings.HasPrefix(fresh, "sk_") || fresh == old {
		t.Fatalf("%s", r)
	}
	if r := s.as(t, old, "GET", "/v1/runs", ""); r.status != 401 {
		t.Errorf("a rotated key's old secret: %d %s, want 401", r.status, r.body)
	}
	if r := s.as(t, fresh, "GET", "/v1/runs", ""); r.status != 200 {
		t.Errorf("a rotated key's new secret: %d %s, want 200", r.status, r.body)
	}

	// Expired: it works until its expiry, and is refused from then on.
	short, _ := mintKey(t, s, "root-token", "--namespace", "default", "--role", "read", "--expires", "2s")
	secrets = append(secrets, short)
	if r := s.as(t, short, "GET", "/v1/runs", ""); r.status != 200 {
		t.Fatalf("a key before its expiry: %d %s", r.status, r.body)
	}
	expiry := time.Now().Add(2 * time.Second)
	for time.Now().Before(expiry.Add(10 * time.Second)) {
		if r := s.as(t, short, "GET", "/v1/runs", ""); r.status == 401 {
			break
		} else if time.Now().After(expiry.Add(time.Second)) {
			t.Fatalf("a key past its expiry: %d %s, want 401", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The list shows ids and roles, never a secret.
	l := keyCLI(t, s, keys["root"], "list", "--json")
	var kl client.KeyList
	if err := json.Unmarshal([]byte(l.stdout), &kl); l.code != 0 || err != nil || len(kl.Keys) != 9 {
		t.Errorf("key list: %v\n%s", err, l)
	}
	s.stop(t)
	for _, f := range []string{db, db + "-wal"} {
		data, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, secret := range secrets {
			if bytes.Contains(data, []byte(secret)) || bytes.Contains(data, []byte(strings.TrimPrefix(secret, "sk_"))) {
				t.Errorf("%s holds a secret", filepath.Base(f))
			}
		}
	}
	for _, secret := range secrets {
		if strings.Contains(s.stderr.String()+l.stdout, strings.TrimPrefix(secret, "sk_")) {
			t.Errorf("the server's log or the key list holds a secret")
		}
	}
	if !strings.Contains(s.stderr.String(), "API key created") {
		t.Errorf("the server's log does not record the keys' creation:\n%s", s.stderr)
	}
}

// TestKeysNoTokenServe: a skein serve without --token is open until a
// key exists; from then on every request needs one, and a key and the
// global --namespace flag work through the client commands.
func TestKeysNoTokenServe(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	if r := s.send(t, "GET", "/v1/runs", nil, nil); r.status != 200 {
		t.Fatalf("a server without token or keys: %d %s", r.status, r.body)
	}
	root, _ := mintKey(t, s, "", "--role", "root")
	if r := keyCLI(t, s, root, "create", "--namespace", "team-a", "--role", "admin"); r.code == 0 || !strings.Contains(r.stderr, `no namespace "team-a"`) {
		t.Errorf("a key of a namespace not created: exit %d %s; want the namespace named", r.code, r.stderr)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		wantExit(t, s.cli(t, []string{"SKEIN_TOKEN=" + root}, "namespace", "create", ns), 0)
	}
	admin, _ := mintKey(t, s, root, "--namespace", "team-a", "--role", "admin")
	if r := s.send(t, "GET", "/v1/runs", nil, nil); r.status != 401 {
		t.Errorf("once a key exists, a request without one: %d %s, want 401", r.status, r.body)
	}
	if r := s.as(t, root, "GET", "/v1/runs", ""); r.status != 200 {
		t.Errorf("a root key: %d %s", r.status, r.body)
	}
	if r := keyCLI(t, s, admin, "list", "--namespace", "team-b"); r.code == 0 || !strings.Contains(r.stderr, "forbidden") {
		t.Errorf("an admin key naming another namespace: %s", r)
	}
	if r := keyCLI(t, s, root, "list", "--namespace", "team-a"); r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, "role admin") {
		t.Errorf("a root key listing namespace team-a's keys: %s", r)
	}
}
