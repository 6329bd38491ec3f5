package main

// End-to-end tests of the timestamped webhook scheme through real
// `skein serve` processes: a delivery is accepted within the hook's
// tolerance of its time and once, however many workers share the
// database, so that a captured delivery cannot start a run again, with
// or without another query, headers or Idempotency-Key.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// signTS is the Skein-Signature value of body signed at unix time t.
func signTS(secret string, t int64, body []byte) string {
	ts := strconv.FormatInt(t, 10)
	return "t=" + ts + ",v1=" + strings.TrimPrefix(sign(secret, append([]byte(ts+"."), body...)), "sha256=")
}

// postStatus POSTs body with one header and returns the answer's status
// (0 if there is none); unlike deliver it may run off the test's
// goroutine.
func postStatus(url string, body []byte, header, value string) int {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set(header, value)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestHookTimestampedReplay: a captured timestamped delivery replayed
// five times, as it was or with its query, headers or Idempotency-Key
// changed, starts no run after the first; one signed outside the
// tolerance is refused; a retry signed again with the same key answers
// the first run.
func TestHookTimestampedReplay(t *testing.T) {
	t.Parallel()
	const secret = "ts-secret"
	s := startServer(t, t.TempDir()+"/skein.db", []string{"SKEIN_HOOK_TS=" + secret}, "--poll", "50ms")
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "hook", "create", "pay", "--module", "srv", "--workflow", "echo", "--secret-env", "SKEIN_HOOK_TS",
		"--scheme", "timestamped", "--tolerance", "1m"), 0, "(signed timestamped, $SKEIN_HOOK_TS, tolerance 1m0s)")

	body := []byte(`{"paid":42}`)
	now := time.Now().Unix()
	sig := signTS(secret, now, body)
	want(t, "a signed delivery", deliver(t, s, "pay", "", body, "Skein-Signature", sig, "Idempotency-Key", "p-1"), 201, "")
	for i, replay := range []struct{ query, key string }{{"", "p-1"}, {"", "p-1"}, {"?admin=1", "p-1"}, {"", "p-2"}, {"", ""}} {
		r := deliver(t, s, "pay", replay.query, body, "Skein-Signature", sig, "Idempotency-Key", replay.key, "X-Extra", "changed")
		if r.status != 401 || r.errCode() != "unauthorized" || !strings.Contains(r.errMessage(), "a replayed delivery is refused") {
			t.Errorf("replay %d (query %q, key %q): %s; want 401 naming the replay", i+1, replay.query, replay.key, r)
		}
	}
	if n := runCount(t, s, ""); n != 1 {
		t.Fatalf("%d runs after a delivery and 5 replays of it; want 1", n)
	}

	// The sender retries: signed again (a new t), the same key.
	r := deliver(t, s, "pay", "", body, "Skein-Signature", signTS(secret, now+1, body), "Idempotency-Key", "p-1")
	want(t, "a retry signed again", r, 200, "")

	for _, c := range []struct{ what, sig, msg string }{
		{"signed 2 minutes ago", signTS(secret, now-120, body), "the hook accepts deliveries signed within 1m0s of it"},
		{"signed 2 minutes ahead", signTS(secret, now+120, body), "the hook accepts deliveries signed within 1m0s of it"},
		{"under another secret", signTS("wrong", now, body), "does not match the hook's secret"},
		{"of another body", signTS(secret, now, []byte(`{"paid":1}`)), "does not match the hook's secret"},
		{"without the header", "", "want header Skein-Signature: t=UNIX,v1=HEX"},
		{"without t", "v1=" + strings.Repeat("ab", 32), "want header Skein-Signature"},
		{"a GitHub signature", sign(secret, body), "want header Skein-Signature"},
	} {
		r := deliver(t, s, "pay", "", body, "Skein-Signature", c.sig, "X-Hub-Signature-256", sign(secret, body))
		if r.status != 401 || !strings.Contains(r.errMessage(), c.msg) {
			t.Errorf("a delivery %s: %s; want 401 naming %q", c.what, r, c.msg)
		}
	}
	if n := runCount(t, s, ""); n != 1 {
		t.Fatalf("%d runs; want the first delivery's only", n)
	}
	for _, bad := range [][]string{
		{"--scheme", "timestamped"},
		{"--secret-env", "SKEIN_HOOK_TS", "--tolerance", "5m"},
		{"--secret-env", "SKEIN_HOOK_TS", "--scheme", "timestamped", "--tolerance", "2h"},
		{"--secret-env", "SKEIN_HOOK_TS", "--scheme", "stripe"},
	} {
		r := s.cli(t, nil, append([]string{"hook", "create", "bad", "--module", "srv", "--workflow", "echo"}, bad...)...)
		wantExit(t, r, 1, "HTTP 400")
	}
}

// TestHookReplayAcrossWorkers: a timestamped delivery accepted by one
// worker is refused as a replay by another sharing the Postgres
// database, and of the same delivery sent to both at once one is
// accepted.
func TestHookReplayAcrossWorkers(t *testing.T) {
	t.Parallel()
	const secret = "ts-secret"
	dsn := postgresSchema(t)
	env := []string{"SKEIN_HOOK_TS=" + secret}
	w1 := startServe(t, []string{"--store", dsn}, env, "--poll", "50ms", "--worker-id", "w1")
	w2 := startServe(t, []string{"--store", dsn}, env, "--poll", "50ms", "--worker-id", "w2")
	deployServerModule(t, w1, nil)
	wantExit(t, w1.cli(t, nil, "hook", "create", "pay", "--module", "srv", "--workflow", "echo", "--secret-env", "SKEIN_HOOK_TS", "--scheme", "timestamped"), 0)
	body := []byte(`{"paid":1}`)
	sig := signTS(secret, time.Now().Unix(), body)
	want(t, "a delivery to w1", deliver(t, w1, "pay", "", body, "Skein-Signature", sig), 201, "")
	if r := deliver(t, w2, "pay", "", body, "Skein-Signature", sig); r.status != 401 {
		t.Errorf("the same delivery to w2: %s; want 401 (a replay)", r)
	}
	for i := range 5 {
		b := []byte(fmt.Sprintf(`{"paid":%d}`, 10+i))
		sig := signTS(secret, time.Now().Unix(), b)
		got := make(chan int, 2)
		for _, w := range []*skeinServer{w1, w2} {
			go func() { got <- postStatus(w.url+"/v1/hooks/pay", b, "Skein-Signature", sig) }()
		}
		if a, b := <-got, <-got; a+b != 201+401 {
			t.Errorf("delivery %d sent to both workers at once: answers %d and %d; want one 201 and one 401", i, a, b)
		}
	}
	if n := runCount(t, w1, ""); n != 6 {
		t.Errorf("%d runs; want 6, one a delivery", n)
	}
}
