// Package testcache gives a test binary the folder its hosts keep
// compiled modules in, shared by the binary's tests: SKEIN_TEST_CACHE_DIR
// when it names one (make test and .ci/run set it, so that later test
// processes and suites compile nothing again), else a new temporary
// folder, removed when the tests end.
package testcache

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Run sets *dir to the cache folder (a temporary one named from prefix
// unless SKEIN_TEST_CACHE_DIR names one), runs m's tests and returns
// their exit code: TestMain calls os.Exit(testcache.Run(m, prefix, &dir)).
func Run(m *testing.M, prefix string, dir *string) int {
	if d := os.Getenv("SKEIN_TEST_CACHE_DIR"); d != "" {
		*dir = d
		return m.Run()
	}
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test cache folder:", err)
		return 1
	}
	*dir = d
	code := m.Run()
	if err := os.RemoveAll(d); err != nil {
		fmt.Fprintln(os.Stderr, "remove the test cache folder:", err)
	}
	return code
}

// Shared is the cache folder of tests that have no TestMain of their own
// to call Run: SKEIN_TEST_CACHE_DIR when it names one, else
// skein-wazero-test in the user's cache folder, which later test
// processes reuse; "" (no cache) where there is none.
func Shared() string {
	if d := os.Getenv("SKEIN_TEST_CACHE_DIR"); d != "" {
		return d
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "skein-wazero-test")
}
