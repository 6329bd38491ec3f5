package server

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/store/sqlite"
)

// BenchmarkAuth: the cost of authenticating a request (an unknown path,
// so that the handler costs nothing) by --token, and by an API key, a
// read of its digest from SQLite on every request.
func BenchmarkAuth(b *testing.B) {
	for _, by := range []string{"token", "key"} {
		b.Run(by, func(b *testing.B) {
			ctx := b.Context()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "skein.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			h, err := host.New(ctx, host.Config{Store: st, CacheDir: testcache.Shared(), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close(context.Background())
			api := New(h, Options{Token: "tok"})
			bearer := "tok"
			if by == "key" {
				secret, _, err := h.CreateKey(b.Context(), host.KeyOptions{Namespace: "default", Role: host.RoleRead})
				if err != nil {
					b.Fatal(err)
				}
				bearer = secret
			}
			for b.Loop() {
				req := newRequest("GET", "/v1/nothing", nil)
				req.Header.Set("Authorization", "Bearer "+bearer)
				rec := httptest.NewRecorder()
				api.ServeHTTP(rec, req)
				if rec.Code != 404 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
