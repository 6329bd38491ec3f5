package main

// End-to-end tests of webhooks (docs/schedules.md) through a real
// `skein serve`: a delivery to a signed hook that is not signed with its
// secret is refused with 401 before anything is stored; a retried
// delivery (the same Idempotency-Key) starts one run; deliveries need no
// API token, everything else still does.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/skeinrun/skein/server"
)

// deliver POSTs body to a hook with the headers given (name, value pairs).
func deliver(t *testing.T, s *skeinServer, hook, query string, body []byte, headers ...string) reply {
	t.Helper()
	req, err := http.NewRequest("POST", s.url+"/v1/hooks/"+hook+query, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("POST hook %s: %v", hook, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, body: data}
}

// sign is the X-Hub-Signature-256 value of body under secret.
func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// runCount is the number of runs the server stores.
func runCount(t *testing.T, s *skeinServer, token string) int {
	t.Helper()
	r := s.call(t, "GET", "/v1/runs?limit=1000", token, nil)
	if r.status != 200 {
		t.Fatalf("GET /v1/runs: %s", r)
	}
	return len(decodeJSON[server.RunList](t, "runs", r.body).Runs)
}

func TestHookSignature(t *testing.T) {
	const token, secret = "tok-123", "s3cret"
	env := []string{"SKEIN_TOKEN=" + token}
	s := startServer(t, t.TempDir()+"/skein.db", []string{"GH_SECRET=" + secret}, "--poll", "50ms", "--token", token, "--max-hook-body-bytes", "4096")
	deployServerModule(t, s, env)
	wantExit(t, s.cli(t, env, "hook", "create", "gh", "--module", "srv", "--workflow", "echo", "--secret-env", "GH_SECRET"), 0,
		"hook gh created: POST /v1/hooks/gh starts workflow echo of srv")
	wantExit(t, s.cli(t, env, "hook", "create", "nosecret", "--module", "srv", "--workflow", "echo", "--secret-env", "NOT_SET_ANYWHERE"), 1,
		"secret variable $NOT_SET_ANYWHERE is not set in the server's environment")

	body := []byte(`{"action":"opened","number":7}`)
	for _, c := range []struct{ what, sig string }{
		{"no signature", ""},
		{"a signature under another secret", sign("wrong", body)},
		{"a signature of another body", sign(secret, []byte(`{}`))},
		{"a signature that is not hex", "sha256=zz"},
		{"the bare hex without sha256=", strings.TrimPrefix(sign(secret, body), "sha256=")},
	} {
		r := deliver(t, s, "gh", "", body, "Content-Type", "application/json", "X-Hub-Signature-256", c.sig, "Idempotency-Key", "d-1")
		if r.status != 401 || r.errCode() != "unauthorized" || !strings.Contains(r.errMessage(), "signature") {
			t.Errorf("%s: %s; want 401 unauthorized naming the signature", c.what, r)
		}
	}
	if n := runCount(t, s, token); n != 0 {
		t.Fatalf("%d runs stored after refused deliveries; want 0", n)
	}

	r := deliver(t, s, "gh", "?src=test", body, "Content-Type", "application/json", "X-Hub-Signature-256", sign(secret, body),
		"X-GitHub-Event", "pull_request", "Authorization", "Bearer leaked")
	want(t, "signed delivery", r, 201, "")
	run := decodeJSON[apiRun](t, "delivery", r.body)
	if !strings.HasPrefix(run.ID, "hook:gh:") || run.Workflow != "echo" {
		t.Fatalf("delivery started %+v; want a hook:gh: run of echo", run)
	}
	done := s.awaitStatus(t, run.ID, token, "completed")
	var in struct {
		Hook, Method, Path string
		Query, Headers     map[string][]string
		Body               string
		JSON               json.RawMessage
	}
	if err := json.Unmarshal(done.Result, &in); err != nil {
		t.Fatal(err)
	}
	if in.Hook != "gh" || in.Method != "POST" || in.Path != "/v1/hooks/gh" || in.Query["src"][0] != "test" || in.Body != string(body) ||
		string(in.JSON) != string(body) || in.Headers["X-Github-Event"][0] != "pull_request" || in.Headers["Authorization"] != nil {
		t.Fatalf("the run's input is %s; want the request without its Authorization header", done.Result)
	}

	big := bytes.Repeat([]byte("x"), 5000)
	r = deliver(t, s, "gh", "", big, "X-Hub-Signature-256", sign(secret, big))
	if r.status != 413 || !strings.Contains(r.errMessage(), "--max-hook-body-bytes") {
		t.Errorf("a 5000-byte body with --max-hook-body-bytes 4096: %s; want 413 naming the flag", r)
	}
	if n := runCount(t, s, token); n != 1 {
		t.Fatalf("%d runs; want the one signed delivery", n)
	}
	// Hooks need no token; the rest of the API still does.
	if r := s.call(t, "GET", "/v1/hooks", "", nil); r.status != 401 {
		t.Errorf("GET /v1/hooks without the token: %s; want 401", r)
	}
	r = s.call(t, "GET", "/v1/hooks", token, nil)
	l := decodeJSON[server.HookList](t, "hooks", r.body)
	if len(l.Hooks) != 1 || l.Hooks[0].Name != "gh" || l.Hooks[0].SecretEnv != "GH_SECRET" || strings.Contains(string(r.body), secret) {
		t.Errorf("GET /v1/hooks: %s; want hook gh naming its variable, not its secret", r)
	}
	wantExit(t, s.cli(t, env, "hook", "delete", "gh"), 0, "hook gh deleted")
	if r := deliver(t, s, "gh", "", body, "X-Hub-Signature-256", sign(secret, body)); r.status != 404 {
		t.Errorf("delivery to a deleted hook: %s; want 404", r)
	}
}

func TestHookIdempotencyKey(t *testing.T) {
	s := startServer(t, t.TempDir()+"/skein.db", nil, "--poll", "50ms")
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "hook", "create", "orders", "--module", "srv", "--workflow", "echo"), 0)
	wantExit(t, s.cli(t, nil, "hook", "list"), 0, "orders  POST /v1/hooks/orders  srv/echo  unsigned")

	r1 := deliver(t, s, "orders", "", []byte(`{"order":1}`), "Idempotency-Key", "order-1")
	want(t, "first delivery", r1, 201, "")
	r2 := deliver(t, s, "orders", "", []byte(`{"order":1,"retry":true}`), "Idempotency-Key", "order-1")
	want(t, "retried delivery", r2, 200, "")
	a, b := decodeJSON[apiRun](t, "first", r1.body), decodeJSON[apiRun](t, "retry", r2.body)
	if a.ID != b.ID || !strings.HasPrefix(a.ID, "hook:orders:") {
		t.Fatalf("the same Idempotency-Key answered runs %s and %s; want one hook:orders: run", a.ID, b.ID)
	}
	r3 := deliver(t, s, "orders", "", []byte(`{"order":2}`), "Idempotency-Key", "order-2")
	want(t, "another key", r3, 201, "")
	if c := decodeJSON[apiRun](t, "third", r3.body); c.ID == a.ID {
		t.Fatalf("another key answered the same run %s", c.ID)
	}
	if n := runCount(t, s, ""); n != 2 {
		t.Fatalf("%d runs after 3 deliveries with 2 keys; want 2", n)
	}
	done := s.awaitStatus(t, a.ID, "", "completed")
	if !strings.Contains(string(done.Result), `"body":"{\"order\":1}"`) {
		t.Errorf("run %s result %s; want the first delivery's body", a.ID, done.Result)
	}
}
