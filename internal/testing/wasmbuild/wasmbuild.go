// Package wasmbuild builds Go packages to wasip1 modules for tests. Builds
// are cached by the Go build cache across processes (a rebuild of an
// unchanged package only links) and by path within one test process. The
// modules land in the user cache folder (skein-wasm).
package wasmbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
	dir   string
)

// Root returns the module root (the folder holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Build builds the package at pkg (a path relative to the module root,
// such as "./examples/race") with GOOS=wasip1 GOARCH=wasm and returns the
// path of the .wasm file. It builds reactor modules (-buildmode=c-shared,
// abi/README.md §1.1), as the README tells users to; with
// SKEIN_TEST_BUILDMODE=exe in the environment it builds commands, and
// the test suites run on them as well (make test-wasmtime).
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	p, err := BuildErr(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// BuildErr is Build without a testing.TB.
func BuildErr(pkg string) (string, error) {
	return build(pkg, Mode())
}

// Mode is the -buildmode of Build: SKEIN_TEST_BUILDMODE, else c-shared.
func Mode() string {
	if m := os.Getenv("SKEIN_TEST_BUILDMODE"); m != "" {
		return m
	}
	return "c-shared"
}

// Reactor reports whether Build builds reactors.
func Reactor() bool { return Mode() == "c-shared" }

// BuildReactor builds pkg as a reactor module (-buildmode=c-shared)
// whatever SKEIN_TEST_BUILDMODE says.
func BuildReactor(tb testing.TB, pkg string) string {
	tb.Helper()
	p, err := build(pkg, "c-shared")
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// build builds pkg with -buildmode=mode ("exe" for a command).
func build(pkg, mode string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[pkg+"\x00"+mode]; ok {
		return p, nil
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		d := filepath.Join(base, "skein-wasm")
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		dir = d
	}
	sum := sha256.Sum256([]byte(Root() + "\x00" + pkg + "\x00" + mode))
	out := filepath.Join(dir, strings.Trim(filepath.Base(pkg), ".")+"-"+hex.EncodeToString(sum[:6])+".wasm")
	// Build to a private file, then rename: test processes running in
	// parallel may build the same package (builds are reproducible).
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	args := []string{"build", "-o", tmp}
	if mode != "" {
		args = append(args, "-buildmode="+mode)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = Root()
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s to wasm: %v\n%s", pkg, err, msg)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	built[pkg+"\x00"+mode] = out
	return out, nil
}
