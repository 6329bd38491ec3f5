package check

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/limitflags"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// cacheDir shares compiled modules between the tests of this process,
// and with later test processes when SKEIN_TEST_CACHE_DIR names a folder
// (internal/testing/testcache); testEngine is the engine of
// SKEIN_TEST_ENGINE (make test-wasmtime), for the checks and the live
// hosts of these tests.
var (
	cacheDir   string
	testEngine string
)

func TestMain(m *testing.M) {
	testEngine = os.Getenv("SKEIN_TEST_ENGINE")
	os.Exit(testcache.Run(m, "skein-check-test-cache-", &cacheDir))
}

// wasmOf builds the package pkg (a path from the module root) to wasm.
func wasmOf(t testing.TB, pkg string) []byte {
	t.Helper()
	b, err := os.ReadFile(wasmbuild.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// check checks the module built from pkg with o (the tests' cache and
// engine unless o names its own).
func check(t *testing.T, pkg string, o Options) *Report {
	t.Helper()
	if o.CacheDir == "" {
		o.CacheDir = cacheDir
	}
	if o.Engine == "" {
		o.Engine = testEngine
	}
	r, err := Module(context.Background(), wasmOf(t, pkg), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// details is the report's summary and details.
func details(r *Report) string {
	var b strings.Builder
	r.Details(&b)
	return r.Summary() + "\n" + b.String()
}

// liveHost is a host on a SQLite store of its own, whose live runs the
// upgrade check's tests check.
type liveHost struct {
	*host.Host
	st store.Store
}

// newLiveHost makes a liveHost with cfg (its store, cache and engine
// set here).
func newLiveHost(t testing.TB, cfg host.Config) *liveHost {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.CacheDir, cfg.Engine, cfg.LimitHint = st, cacheDir, testEngine, limitflags.Flag
	h, err := host.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close(ctx)
		st.Close()
	})
	return &liveHost{Host: h, st: st}
}

// deploy builds a package to wasm and deploys it.
func (h *liveHost) deploy(t testing.TB, pkg string) store.Module {
	t.Helper()
	m, err := h.Deploy(context.Background(), filepath.Base(pkg), wasmOf(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
