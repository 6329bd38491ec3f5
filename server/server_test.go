package server

// Handler-level tests: requests go straight to the handler (no network),
// against a real host and a real SQLite store, without a worker pool, so
// runs stay where Start leaves them. The end-to-end tests through a real
// `skein serve` process are in cmd/skein/server_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

type testAPI struct {
	t  *testing.T
	h  http.Handler
	st store.Store
	hs *host.Host
}

// testNamespaces are the namespaces every test API has besides default.
var testNamespaces = []string{"a", "b", "team-a", "team-b"}

func newTestAPI(t *testing.T, o Options) *testAPI {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cache := testcache.Shared()
	h, err := host.New(ctx, host.Config{Store: st, CacheDir: cache})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(ctx); st.Close() })
	for _, ns := range testNamespaces { // for the keys of the tests
		if _, err := h.CreateNamespace(ctx, ns, host.NamespaceOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &testAPI{t: t, h: New(h, o), st: st, hs: h}
}

// newRequest is httptest.NewRequest addressed to 127.0.0.1 (httptest's
// default Host, example.com, is not this server) and, for a write, with
// the Content-Type its clients send.
func newRequest(method, path string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, path, body)
	req.Host = "127.0.0.1"
	if method == http.MethodPost {
		ct := "application/json"
		if strings.HasPrefix(path, "/v1/modules") {
			ct = "application/wasm"
		}
		req.Header.Set("Content-Type", ct)
	}
	return req
}

type answer struct {
	code int
	hdr  http.Header
	body []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.code, bytes.TrimSpace(a.body)) }

func (a answer) errCode() string {
	var e ErrorBody
	json.Unmarshal(a.body, &e)
	return e.Error.Code
}

// do serves one request; body is sent as is when []byte or io.Reader,
// as JSON text when string.
func (ta *testAPI) do(method, path string, body any, hdr ...string) answer {
	ta.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	case io.Reader:
		rd = b
	}
	req := newRequest(method, path, rd)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	ta.h.ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		ta.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	if !json.Valid(rec.Body.Bytes()) {
		ta.t.Errorf("%s %s: the answer is not JSON: %q", method, path, rec.Body.String())
	}
	return answer{code: rec.Code, hdr: rec.Header(), body: rec.Body.Bytes()}
}

func (ta *testAPI) want(what string, a answer, code int, errCode string) {
	ta.t.Helper()
	if a.code != code || (errCode != "" && a.errCode() != errCode) {
		ta.t.Errorf("%s: %s; want %d %s", what, a, code, errCode)
	}
}

func TestAPIAuth(t *testing.T) {
	ta := newTestAPI(t, Options{Token: "tok"})
	for name, hdr := range map[string][]string{
		"none":       nil,
		"wrong":      {"Authorization", "Bearer nope"},
		"not bearer": {"Authorization", "Basic dG9rOg=="},
		"bare token": {"Authorization", "tok"},
		"prefix":     {"Authorization", "Bearer to"},
	} {
		a := ta.do("GET", "/v1/modules", nil, hdr...)
		ta.want(name, a, 401, CodeUnauthorized)
		if a.hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate header", name)
		}
	}
	ta.want("right token", ta.do("GET", "/v1/modules", nil, "Authorization", "Bearer tok"), 200, "")
}

// onlyReader hides a body's length, as a chunked upload does.
type onlyReader struct{ io.Reader }

func TestAPIUploads(t *testing.T) {
	ta := newTestAPI(t, Options{MaxModuleBytes: 1000})
	ta.want("empty", ta.do("POST", "/v1/modules", []byte{}), 400, CodeInvalidModule)
	ta.want("text", ta.do("POST", "/v1/modules?name=x", []byte("not wasm at all")), 400, CodeInvalidModule)
	ta.want("no skein imports", ta.do("POST", "/v1/modules", []byte("\x00asm\x01\x00\x00\x00")), 400, CodeInvalidModule)
	big := bytes.Repeat([]byte{0}, 1001)
	ta.want("too large, with a length", ta.do("POST", "/v1/modules", big), 413, CodeTooLarge)
	ta.want("too large, chunked", ta.do("POST", "/v1/modules", onlyReader{bytes.NewReader(big)}), 413, CodeTooLarge)
	a := ta.do("GET", "/v1/modules", nil)
	ta.want("list", a, 200, "")
	if strings.TrimSpace(string(a.body)) != `{"modules":[]}` {
		t.Errorf("modules after bad uploads: %s", a)
	}
}

// newSrvAPI is a test API with testdata/workflows/server deployed as
// "srv"; it returns the module and its bytes.
func newSrvAPI(t *testing.T) (*testAPI, Module, []byte) {
	t.Helper()
	ta := newTestAPI(t, Options{})
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/server"))
	if err != nil {
		t.Fatal(err)
	}
	a := ta.do("POST", "/v1/modules?name=srv", wasm)
	ta.want("deploy", a, 201, "")
	var m Module
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatal(err)
	}
	return ta, m, wasm
}

func TestAPIRuns(t *testing.T) {
	ta, m, wasm := newSrvAPI(t)
	ta.want("deploy again", ta.do("POST", "/v1/modules", wasm), 200, "")

	start := `{"module":"srv","workflow":"echo","input":[1],"id":"a"}`
	a := ta.do("POST", "/v1/runs", start)
	ta.want("start", a, 201, "")
	var r Run
	json.Unmarshal(a.body, &r)
	if r.ID != "a" || r.Module != m.Hash || r.Status != "pending" || string(r.Input) != "[1]" {
		t.Errorf("started %+v", r)
	}
	ta.want("same start", ta.do("POST", "/v1/runs", start), 200, "")
	ta.want("same start by hash", ta.do("POST", "/v1/runs", `{"module":"`+m.Hash+`","workflow":"echo","input":[1],"id":"a"}`), 200, "")
	ta.want("conflicting start", ta.do("POST", "/v1/runs", `{"module":"srv","workflow":"echo","input":[2],"id":"a"}`), 409, CodeConflict)
	ta.want("unknown module", ta.do("POST", "/v1/runs", `{"module":"nope","workflow":"echo"}`), 404, CodeNotFound)
	ta.want("unknown workflow", ta.do("POST", "/v1/runs", `{"module":"srv","workflow":"nope"}`), 400, CodeBadRequest)
	ta.want("bad timeout", ta.do("POST", "/v1/runs", `{"module":"srv","workflow":"echo","timeout":"-1s"}`), 400, CodeBadRequest)
	ta.want("two values", ta.do("POST", "/v1/runs", `{"module":"srv","workflow":"echo"} {}`), 400, CodeBadRequest)
	for _, id := range []string{"b", "c"} {
		ta.want("start "+id, ta.do("POST", "/v1/runs", `{"module":"srv","workflow":"echo","id":"`+id+`"}`), 201, "")
	}
	a = ta.do("GET", "/v1/runs?limit=2", nil)
	var l RunList
	json.Unmarshal(a.body, &l)
	if len(l.Runs) != 2 || l.Runs[0].ID != "a" || l.Runs[1].ID != "b" || l.NextCursor != "b" {
		t.Errorf("first page %s", a)
	}
	a = ta.do("GET", "/v1/runs?limit=2&cursor=b&status=pending", nil)
	l = RunList{}
	json.Unmarshal(a.body, &l)
	if len(l.Runs) != 1 || l.Runs[0].ID != "c" || l.NextCursor != "" {
		t.Errorf("second page %s", a)
	}
	// A generated id.
	a = ta.do("POST", "/v1/runs", `{"module":"srv","workflow":"echo"}`)
	ta.want("start without id", a, 201, "")
	json.Unmarshal(a.body, &r)
	if r.ID == "" || string(r.Input) != "null" {
		t.Errorf("generated run %+v", r)
	}

	ta.want("limit 0", ta.do("GET", "/v1/runs?limit=0", nil), 400, CodeBadRequest)
	ta.want("limit x", ta.do("GET", "/v1/runs?limit=x", nil), 400, CodeBadRequest)

	a = ta.do("GET", "/v1/runs/a/outcomes", nil)
	ta.want("outcomes", a, 200, "")
	if want := `{"run":"a","workflow":"echo","status":"pending","result":null,"error":null,"outcomes":[]}`; strings.TrimSpace(string(a.body)) != want {
		t.Errorf("outcomes of a pending run: %s; want %s", a.body, want)
	}
	ta.want("unknown run", ta.do("GET", "/v1/runs/zz", nil), 404, CodeNotFound)
	ta.want("unknown run outcomes", ta.do("GET", "/v1/runs/zz/outcomes", nil), 404, CodeNotFound)
	ta.want("unknown run cancel", ta.do("POST", "/v1/runs/zz/cancel", nil), 404, CodeNotFound)
	ta.want("cancel with a bad body", ta.do("POST", "/v1/runs/a/cancel", `{"why":"x"}`), 400, CodeBadRequest)

	for name, body := range map[string]string{
		"both":        `{"value":1,"error":"x"}`,
		"neither":     `{}`,
		"empty error": `{"error":""}`,
		"not JSON":    `{"value":`,
		"empty body":  ``,
		"error type":  `{"error":1}`,
	} {
		ta.want("resolve "+name, ta.do("POST", "/v1/promises/a.1", body), 400, CodeBadRequest)
	}
	ta.want("resolve unknown", ta.do("POST", "/v1/promises/zz.approve", `{"value":null}`), 404, CodeNotFound)

	a = ta.do("POST", "/v1/runs/b/cancel", `{"reason":"no longer needed"}`)
	ta.want("cancel", a, 200, "")
	json.Unmarshal(a.body, &r)
	if r.ID != "b" || r.CancelReason != "no longer needed" {
		t.Errorf("canceled %+v", r)
	}
	ta.want("unknown endpoint", ta.do("GET", "/v2/runs", nil), 404, CodeNotFound)
	a = ta.do("PATCH", "/v1/runs/a", nil)
	ta.want("wrong method", a, 405, CodeMethodNotAllowed)
	if a.hdr.Get("Allow") != "GET, DELETE" {
		t.Errorf("wrong method: Allow %q, want GET, DELETE", a.hdr.Get("Allow"))
	}
	ta.want("delete a run that has not ended", ta.do("DELETE", "/v1/runs/a", nil), 409, CodeConflict)
	ta.want("wrong method on a collection", ta.do("PUT", "/v1/runs", nil), 405, CodeMethodNotAllowed)
	ta.want("request too large", newTestAPIWith(ta, Options{MaxRequestBytes: 10}).do("POST", "/v1/runs", start), 413, CodeTooLarge)
}

// newTestAPIWith is another handler on the same host and store.
func newTestAPIWith(ta *testAPI, o Options) *testAPI {
	return &testAPI{t: ta.t, h: New(ta.hs, o), st: ta.st, hs: ta.hs}
}

// TestAPIErrorMapping: every kind of host and store error gets its status.
func TestAPIErrorMapping(t *testing.T) {
	a := &api{log: slog.New(slog.DiscardHandler)}
	for _, c := range []struct {
		err  error
		code int
		ec   string
	}{
		{&host.ModuleError{Module: "m", Reason: "bad"}, 400, CodeInvalidModule},
		{fmt.Errorf("start: %w", &host.ConflictError{RunID: "r", Field: "input"}), 409, CodeConflict},
		{fmt.Errorf("x: %w", store.ErrNotFound), 404, CodeNotFound},
		{fmt.Errorf("x: %w", host.ErrNotFound), 404, CodeNotFound},
		{fmt.Errorf("x: %w", host.ErrTerminal), 409, CodeConflict},
		{fmt.Errorf("x: %w", host.ErrConflict), 409, CodeConflict},
		{&http.MaxBytesError{Limit: 3}, 413, CodeTooLarge},
		{errors.New("disk on fire"), 500, CodeInternal},
		{fmt.Errorf("x: %w", store.ErrUnavailable), 503, CodeUnavailable},
	} {
		rec := httptest.NewRecorder()
		a.fail(rec, httptest.NewRequest("GET", "/v1/x", nil), c.err)
		var e ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != c.code || e.Error.Code != c.ec || e.Error.Message == "" {
			t.Errorf("%v: %d %s; want %d %s", c.err, rec.Code, rec.Body, c.code, c.ec)
		}
		if ra := rec.Header().Get("Retry-After"); (c.code == 503) != (ra == "1") {
			t.Errorf("%v: Retry-After %q", c.err, ra)
		}
	}
}

// TestRunLeases: the run document names the worker holding the run's
// lease, and GET /v1/runs/{id}/leases lists every claim.
func TestRunLeases(t *testing.T) {
	ta := newTestAPI(t, Options{})
	ctx := context.Background()
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/server"))
	if err != nil {
		t.Fatal(err)
	}
	ta.want("deploy", ta.do("POST", "/v1/modules?name=srv", wasm), 201, "")

	// fields decodes a run document loosely, to see which keys it has.
	fields := func(what string, a answer) map[string]any {
		t.Helper()
		ta.want(what, a, 200, "")
		var m map[string]any
		if err := json.Unmarshal(a.body, &m); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return m
	}
	leases := func(id string) []Lease {
		t.Helper()
		a := ta.do("GET", "/v1/runs/"+id+"/leases", nil)
		ta.want("leases of "+id, a, 200, "")
		var l LeaseList
		if err := json.Unmarshal(a.body, &l); err != nil || l.Run != id || l.Leases == nil {
			t.Fatalf("leases of %s: %s (%v)", id, a, err)
		}
		return l.Leases
	}

	// A run driven by a worker: one claim, released when the run ended.
	ta.want("start", ta.do("POST", "/v1/runs", `{"module":"srv","workflow":"echo","input":[1],"id":"driven"}`), 201, "")
	if l := leases("driven"); len(l) != 0 {
		t.Errorf("a run never claimed has leases %+v", l)
	}
	wctx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- ta.hs.Work(wctx, host.WorkOptions{Owner: "w-worker-1"}) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := fields("driven", ta.do("GET", "/v1/runs/driven", nil))
		if m["status"] == "completed" && m["worker"] == nil {
			if _, ok := m["lease_expiry"]; ok {
				t.Errorf("a run no worker holds has lease_expiry: %v", m)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not complete the run and release it: %v", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-worked; err != nil {
		t.Fatal(err)
	}
	l := leases("driven")
	if len(l) != 1 {
		t.Fatalf("leases of the driven run: %+v, want one", l)
	}
	if c := l[0]; c.Worker != "w-worker-1" || c.Token != 1 || c.ReleasedAt == nil || !c.EndedAt.Equal(*c.ReleasedAt) ||
		c.ClaimedAt.After(c.EndedAt) || c.Expiry.Before(c.EndedAt) || c.ClaimedAt.Location() != time.UTC {
		t.Errorf("lease of the driven run %+v", c)
	}

	// A lease taken directly on a pending run (the worker has stopped).
	ta.want("start held", ta.do("POST", "/v1/runs", `{"module":"srv","workflow":"echo","input":[2],"id":"held"}`), 201, "")
	now := time.Now()
	claimed, err := ta.st.ClaimRuns(ctx, "w-test", now.UnixNano(), time.Minute, 0)
	if err != nil || len(claimed) != 1 || claimed[0].Run.ID != "held" {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	lease := claimed[0].Lease
	a := ta.do("GET", "/v1/runs/held", nil)
	m := fields("held", a)
	var r Run
	json.Unmarshal(a.body, &r)
	if m["worker"] != "w-test" || r.Worker != "w-test" || r.LeaseExpiry == nil || r.LeaseExpiry.UnixNano() != lease.Expiry {
		t.Errorf("a held run: %s; want worker w-test, lease_expiry %v", a, time.Unix(0, lease.Expiry).UTC())
	}
	if s, _ := m["lease_expiry"].(string); !strings.HasSuffix(s, "Z") {
		t.Errorf("lease_expiry %q is not RFC 3339 UTC", s)
	}
	var rl RunList
	json.Unmarshal(ta.do("GET", "/v1/runs", nil).body, &rl)
	for _, run := range rl.Runs {
		if want := map[string]string{"held": "w-test"}[run.ID]; run.Worker != want {
			t.Errorf("run %s in the list: worker %q, want %q", run.ID, run.Worker, want)
		}
	}
	l = leases("held")
	if len(l) != 1 || l[0].Worker != "w-test" || l[0].Token != lease.Token || l[0].ReleasedAt != nil ||
		l[0].ClaimedAt.UnixNano() != now.UnixNano() || !l[0].EndedAt.Equal(l[0].Expiry) || l[0].Expiry.UnixNano() != lease.Expiry {
		t.Errorf("leases of the held run %+v (lease %+v)", l, lease)
	}
	if err := ta.st.ReleaseLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	m = fields("released", ta.do("GET", "/v1/runs/held", nil))
	if _, ok := m["worker"]; ok {
		t.Errorf("a released run has a worker: %v", m)
	}
	if _, ok := m["lease_expiry"]; ok {
		t.Errorf("a released run has lease_expiry: %v", m)
	}
	l = leases("held")
	if len(l) != 1 || l[0].ReleasedAt == nil || !l[0].EndedAt.Equal(*l[0].ReleasedAt) {
		t.Errorf("leases of the released run %+v", l)
	}
	// The wire names of a lease.
	a = ta.do("GET", "/v1/runs/held/leases", nil)
	var raw struct{ Leases []map[string]any }
	json.Unmarshal(a.body, &raw)
	for _, k := range []string{"worker", "token", "claimed_at", "expiry", "released_at", "ended_at"} {
		if len(raw.Leases) != 1 || raw.Leases[0][k] == nil {
			t.Errorf("lease without %q: %s", k, a)
		}
	}

	ta.want("leases of an unknown run", ta.do("GET", "/v1/runs/nope/leases", nil), 404, CodeNotFound)
	ta.want("POST leases", ta.do("POST", "/v1/runs/held/leases", nil), 405, CodeMethodNotAllowed)
	authed := newTestAPIWith(ta, Options{Token: "tok"})
	authed.want("leases without the token", authed.do("GET", "/v1/runs/held/leases", nil), 401, CodeUnauthorized)
}
