package main

// End-to-end tests of webhooks (docs/schedules.md) through a real
// `skein serve`: a delivery to a signed hook that is not signed with its
// secret is refused with 401 before anything is stored; a retried
// delivery (the same Idempotency-Key and body) starts one run, and a key
// is bound to the body of its first delivery; deliveries need no API
// token, everything else still does. hookreplay_test.go has the
// timestamped scheme, hooksecrets_test.go where secrets may come from.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
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
	t.Parallel()
	const token, secret = "tok-123", "s3cret"
	env := []string{"SKEIN_TOKEN=" + token}
	s := startServer(t, t.TempDir()+"/skein.db", []string{"SKEIN_HOOK_GH=" + secret}, "--poll", "50ms", "--token", token, "--max-hook-body-bytes", "4096")
	deployServerModule(t, s, env)
	wantExit(t, s.cli(t, env, "hook", "create", "gh", "--module", "srv", "--workflow", "echo", "--secret-env", "SKEIN_HOOK_GH"), 0,
		"hook gh created: POST /v1/hooks/gh starts workflow echo of srv (signed github, $SKEIN_HOOK_GH)")
	wantExit(t, s.cli(t, env, "hook", "create", "nosecret", "--module", "srv", "--workflow", "echo", "--secret-env", "SKEIN_HOOK_NOT_SET"), 1,
		"$SKEIN_HOOK_NOT_SET is not set in the server's environment")

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
		DroppedHeaders     []string `json:"dropped_headers"`
		Body               string
		JSON               json.RawMessage
	}
	if err := json.Unmarshal(done.Result, &in); err != nil {
		t.Fatal(err)
	}
	if in.Hook != "gh" || in.Method != "POST" || in.Path != "/v1/hooks/gh" || in.Query["src"][0] != "test" || in.Body != string(body) ||
		string(in.JSON) != string(body) || in.Headers["X-Github-Event"][0] != "pull_request" || in.Headers["Authorization"] != nil ||
		in.Headers["X-Hub-Signature-256"] != nil || !slices.Equal(in.DroppedHeaders, []string{"Authorization", "X-Hub-Signature-256"}) {
		t.Fatalf("the run's input is %s; want the request without its Authorization and signature headers, and their names", done.Result)
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
	if len(l.Hooks) != 1 || l.Hooks[0].Name != "gh" || l.Hooks[0].SecretEnv != "SKEIN_HOOK_GH" || strings.Contains(string(r.body), secret) {
		t.Errorf("GET /v1/hooks: %s; want hook gh naming its variable, not its secret", r)
	}
	wantExit(t, s.cli(t, env, "hook", "delete", "gh"), 0, "hook gh deleted")
	if r := deliver(t, s, "gh", "", body, "X-Hub-Signature-256", sign(secret, body)); r.status != 404 {
		t.Errorf("delivery to a deleted hook: %s; want 404", r)
	}
}

// TestHookIdempotencyKey: a retried delivery (the same key and body)
// answers the first one's run; a delivery that reuses a key with another
// body is refused with 409, so that a delivery cannot take over the key
// of another (an old signed body replayed under the key a later real
// delivery carries: the real one is refused, not silently mapped to the
// old body's run).
func TestHookIdempotencyKey(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	s := startServer(t, t.TempDir()+"/skein.db", []string{"SKEIN_HOOK_GH=" + secret}, "--poll", "50ms")
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "hook", "create", "orders", "--module", "srv", "--workflow", "echo"), 0)
	wantExit(t, s.cli(t, nil, "hook", "list"), 0, "orders  POST /v1/hooks/orders  srv/echo  unsigned")

	r1 := deliver(t, s, "orders", "", []byte(`{"order":1}`), "Idempotency-Key", "order-1")
	want(t, "first delivery", r1, 201, "")
	r2 := deliver(t, s, "orders", "", []byte(`{"order":1}`), "Idempotency-Key", "order-1")
	want(t, "retried delivery", r2, 200, "")
	a, b := decodeJSON[apiRun](t, "first", r1.body), decodeJSON[apiRun](t, "retry", r2.body)
	if a.ID != b.ID || !strings.HasPrefix(a.ID, "hook:orders:") {
		t.Fatalf("the same Idempotency-Key answered runs %s and %s; want one hook:orders: run", a.ID, b.ID)
	}
	r3 := deliver(t, s, "orders", "", []byte(`{"order":1,"changed":true}`), "Idempotency-Key", "order-1")
	if r3.status != 409 || r3.errCode() != "conflict" || !strings.Contains(r3.errMessage(), "Idempotency-Key was first used by a delivery with another body") {
		t.Errorf("the key of a delivery with another body: %s; want 409 conflict naming the rule", r3)
	}
	r4 := deliver(t, s, "orders", "", []byte(`{"order":2}`), "Idempotency-Key", "order-2")
	want(t, "another key", r4, 201, "")
	if c := decodeJSON[apiRun](t, "another key", r4.body); c.ID == a.ID {
		t.Fatalf("another key answered the same run %s", c.ID)
	}
	if n := runCount(t, s, ""); n != 2 {
		t.Fatalf("%d runs after 4 deliveries with 2 keys; want 2", n)
	}
	done := s.awaitStatus(t, a.ID, "", "completed")
	if !strings.Contains(string(done.Result), `"body":"{\"order\":1}"`) {
		t.Errorf("run %s result %s; want the first delivery's body", a.ID, done.Result)
	}

	// A signed hook: an old delivery, captured, is sent again under the
	// key that the next real delivery will carry.
	wantExit(t, s.cli(t, nil, "hook", "create", "gh", "--module", "srv", "--workflow", "echo", "--secret-env", "SKEIN_HOOK_GH"), 0)
	old, next := []byte(`{"ref":"old"}`), []byte(`{"ref":"new"}`)
	want(t, "the old delivery", deliver(t, s, "gh", "", old, "X-Hub-Signature-256", sign(secret, old), "Idempotency-Key", "d-1"), 201, "")
	want(t, "the old delivery under the next key", deliver(t, s, "gh", "", old, "X-Hub-Signature-256", sign(secret, old), "Idempotency-Key", "d-2"), 201, "")
	r := deliver(t, s, "gh", "", next, "X-Hub-Signature-256", sign(secret, next), "Idempotency-Key", "d-2")
	if r.status != 409 || r.errCode() != "conflict" {
		t.Errorf("the real delivery of key d-2, after an old body took it: %s; want 409 conflict, not the old body's run", r)
	}
}

// hookIn is the part of a hook run's input (host.HookInput) the tests
// read.
type hookIn struct {
	Headers        map[string][]string `json:"headers"`
	DroppedHeaders []string            `json:"dropped_headers"`
}

// hookRunInput delivers {} with headers to hook and returns the input its
// run completed with (the echo workflow returns its input).
func hookRunInput(t *testing.T, s *skeinServer, hook string, headers ...string) hookIn {
	t.Helper()
	r := deliver(t, s, hook, "", []byte(`{}`), headers...)
	want(t, "delivery to "+hook, r, 201, "")
	done := s.awaitStatus(t, decodeJSON[apiRun](t, "delivery", r.body).ID, "", "completed")
	var in hookIn
	if err := json.Unmarshal(done.Result, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestHookDropsCredentialHeaders: a header whose name looks like a
// credential (Authorization, Cookie, X-Api-Key, X-*-Token, X-Auth-*, a
// signature) is left out of the run's input and named in
// dropped_headers; a hook keeps one it lists with --keep-header.
func TestHookDropsCredentialHeaders(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/skein.db", nil, "--poll", "50ms")
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "hook", "create", "plain", "--module", "srv", "--workflow", "echo"), 0)
	headers := []string{"X-Api-Key", "k-123", "X-Gitlab-Token", "t-456", "X-Auth-User", "ana", "Cookie", "sid=1",
		"X-Slack-Signature", "v0=abc", "X-Session-Id", "s-1", "X-Github-Event", "push", "Idempotency-Key", "d-1", "Content-Type", "application/json"}
	in := hookRunInput(t, s, "plain", headers...)
	dropped := []string{"Cookie", "X-Api-Key", "X-Auth-User", "X-Gitlab-Token", "X-Session-Id", "X-Slack-Signature"}
	for _, h := range dropped {
		if in.Headers[h] != nil {
			t.Errorf("the run's input holds %s: %q", h, in.Headers[h])
		}
	}
	if in.Headers["X-Github-Event"] == nil || in.Headers["Idempotency-Key"] == nil || in.Headers["Content-Type"] == nil || !slices.Equal(in.DroppedHeaders, dropped) {
		t.Errorf("the run's input: headers %q, dropped %q; want X-Github-Event, Idempotency-Key and Content-Type kept, %q dropped", in.Headers, in.DroppedHeaders, dropped)
	}

	wantExit(t, s.cli(t, nil, "hook", "create", "keeps", "--module", "srv", "--workflow", "echo", "--keep-header", "x-api-key", "--keep-header", "X-Auth-User"), 0)
	in = hookRunInput(t, s, "keeps", headers[:6]...)
	if in.Headers["X-Api-Key"] == nil || in.Headers["X-Auth-User"] == nil || in.Headers["X-Gitlab-Token"] != nil || !slices.Equal(in.DroppedHeaders, []string{"X-Gitlab-Token"}) {
		t.Errorf("a hook keeping X-Api-Key and X-Auth-User: headers %q, dropped %q", in.Headers, in.DroppedHeaders)
	}
	wantExit(t, s.cli(t, nil, "hook", "create", "bad", "--module", "srv", "--workflow", "echo", "--keep-header", "X Api"), 1,
		`header to keep "X Api": want a header name`)
}
