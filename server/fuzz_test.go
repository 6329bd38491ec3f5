package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store/sqlite"
)

// fuzzRoutes are the requests FuzzAPIRequests makes; {id} is the fuzzed
// path segment, the body is the fuzzed body, {q} the fuzzed query value.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/v1/runs"},
	{"POST", "/v1/promises/{id}"},
	{"POST", "/v1/runs/{id}/cancel"},
	{"POST", "/v1/modules?name={q}"},
	{"GET", "/v1/runs?status={q}&limit={q}&cursor={q}"},
	{"GET", "/v1/runs/{id}"},
	{"GET", "/v1/runs/{id}/outcomes"},
	{"GET", "/v1/modules/{id}"},
	{"PUT", "/v1/{id}"},
	{"POST", "/v1/runs/{id}/reset"},
}

// FuzzAPIRequests sends the API arbitrary request bodies, ids and query
// values: every answer must be JSON with the right shape and none may be
// an internal error (500), whatever the client sends. The seeds run in
// `make test`; run `go test -fuzz FuzzAPIRequests ./server/` to search
// further.
func FuzzAPIRequests(f *testing.F) {
	for _, s := range []struct {
		route    uint8
		id, q    string
		body     string
		contentT string
	}{
		{0, "", "", `{"module":"srv","workflow":"sleeper","input":{"ms":1},"id":"r1"}`, ""},
		{0, "", "", `{"module":"srv","workflow":"sleeper","input":{"ms":1},"id":"r1","timeout":"-1s"}`, ""},
		{0, "", "", `{"module":"srv","input":[1,2,3],"id":"a.b"}`, ""},
		{0, "", "", `{"module":"nope"}{}`, ""},
		{0, "", "", `{"module":"srv","workflow":"waiter","input":"` + strings.Repeat("x", 300) + `","id":"` + strings.Repeat("y", 200) + `"}`, ""},
		{1, "r1.1", "", `{"value":{"a":1}}`, ""},
		{1, "r1.approve", "", `{"error":""}`, ""},
		{1, "r1.approve", "", `{"value":1,"error":"x"}`, ""},
		{1, "..", "", `{"value":null}`, ""},
		{2, "r1", "", `{"reason":"because"}`, ""},
		{2, "r1", "", ``, ""},
		{3, "", "m", "\x00asm\x01\x00\x00\x00", ""},
		{3, "", "", "garbage", ""},
		{4, "", "running", "", ""},
		{4, "", "0", "", ""},
		{5, "r1", "", "", ""},
		{6, "r1", "", "", ""},
		{7, "srv", "", "", ""},
		{8, "x", "", "{}", ""},
	} {
		f.Add(s.route, s.id, s.q, []byte(s.body))
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		f.Fatal(err)
	}
	cache := testcache.Shared()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := host.New(ctx, host.Config{Store: st, CacheDir: cache, Logger: quiet})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close(ctx); st.Close() })
	wasm, err := os.ReadFile(wasmbuild.Build(f, "./testdata/workflows/server"))
	if err != nil {
		f.Fatal(err)
	}
	if _, err := h.Deploy(ctx, "srv", wasm); err != nil {
		f.Fatal(err)
	}
	api := New(h, Options{Logger: quiet, MaxModuleBytes: 1 << 20, MaxRequestBytes: 1 << 16})
	f.Fuzz(func(t *testing.T, route uint8, id, q string, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := strings.ReplaceAll(rt.path, "{id}", url.PathEscape(id))
		path = strings.ReplaceAll(path, "{q}", url.QueryEscape(q))
		req := newRequest(rt.method, path, bytes.NewReader(body))
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", rt.method, path, body, rec.Code, rec.Body)
		}
		if rec.Code == http.StatusMovedPermanently || rec.Code == http.StatusTemporaryRedirect || rec.Code == http.StatusPermanentRedirect {
			return // http.ServeMux cleaning a path with "." or ".." segments
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: %d with Content-Type %q: %q", rt.method, path, rec.Code, ct, rec.Body)
		}
		if rec.Code >= 400 {
			var e ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%s %s: %d with a malformed error body %q", rt.method, path, rec.Code, rec.Body)
			}
		} else if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s: %d with a body that is not JSON: %q", rt.method, path, rec.Code, rec.Body)
		}
		if rec.Code == http.StatusMethodNotAllowed && rec.Header().Get("Allow") == "" {
			t.Fatalf("%s %s: 405 without Allow", rt.method, path)
		}
	})
}
