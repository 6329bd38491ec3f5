// Package guestbuild builds the C and Rust guests of this repository to
// wasm32-wasi modules for tests, with Debian's toolchains: clang, lld and
// wasi-libc for C; rustc, cargo and libstd-rust-dev-wasm32 for Rust
// (.ci/run installs them). Builds are cached in the user cache folder
// (skein-guest), keyed by a hash of the sources and the toolchain's
// version, so an unchanged guest is built once across test processes.
//
// A test that needs a toolchain that is missing is skipped, unless
// SKEIN_REQUIRE_GUEST_TOOLCHAINS is set: then it fails (CI sets it).
package guestbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// The toolchain's programs. The Rust ones are Debian's, never a rustup
// proxy found first on PATH: a fresh CI machine has only Debian's.
const (
	clang = "/usr/bin/clang"
	cargo = "/usr/bin/cargo"
	rustc = "/usr/bin/rustc"
)

// RustSDK is the Rust guest SDK crate, a path dependency of every Rust
// guest, relative to the module root.
const RustSDK = "guest-sdk/rust"

// RequireEnv makes a missing toolchain fail the test instead of skipping it.
const RequireEnv = "SKEIN_REQUIRE_GUEST_TOOLCHAINS"

var (
	mu    sync.Mutex
	built = map[string]string{}
	vers  = map[string]string{}
)

// C compiles the C files srcs (paths relative to the module root) into
// one wasm32-wasi command module, with abi/ on the include path (for
// skein.h), and returns the path of the .wasm file.
func C(tb testing.TB, srcs ...string) string {
	tb.Helper()
	need(tb, "C", HaveC())
	p, err := CErr(srcs...)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Rust builds the cargo crate in dir (relative to the module root; its
// binary has the crate's name) in release mode for wasm32-wasi and
// returns the path of the .wasm file.
func Rust(tb testing.TB, dir string) string {
	tb.Helper()
	need(tb, "Rust", HaveRust())
	p, err := RustErr(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// RequireRust skips (or, with SKEIN_REQUIRE_GUEST_TOOLCHAINS, fails) the
// test when the Rust toolchain is missing.
func RequireRust(tb testing.TB) { tb.Helper(); need(tb, "Rust", HaveRust()) }

// RequireC skips (or, with SKEIN_REQUIRE_GUEST_TOOLCHAINS, fails) the
// test when the C toolchain is missing.
func RequireC(tb testing.TB) { tb.Helper(); need(tb, "C", HaveC()) }

func need(tb testing.TB, lang string, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	if os.Getenv(RequireEnv) != "" {
		tb.Fatalf("the %s guest toolchain is missing (%s is set): %v", lang, RequireEnv, err)
	}
	testgroup.Skip(tb, "guest-toolchains", "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32 rustc cargo libstd-rust-dev-wasm32 (as .ci/run does)",
		fmt.Sprintf("the %s guest toolchain is missing: %v (set %s to fail instead)", lang, err, RequireEnv))
}

// HaveC reports why the C toolchain cannot build a guest, nil if it can.
func HaveC() error {
	for _, f := range []string{clang, "/usr/bin/wasm-ld", "/usr/lib/wasm32-wasi/libc.a"} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s: %w (install clang lld wasi-libc libclang-rt-14-dev-wasm32)", f, err)
		}
	}
	out, err := exec.Command(clang, "--target=wasm32-wasi", "-print-libgcc-file-name").Output()
	if err != nil {
		return fmt.Errorf("clang: %w", err)
	}
	if rt := strings.TrimSpace(string(out)); rt != "" {
		if _, err := os.Stat(rt); err != nil {
			return fmt.Errorf("%s: %w (install libclang-rt-14-dev-wasm32)", rt, err)
		}
	}
	return nil
}

// HaveRust reports why the Rust toolchain cannot build a guest, nil if it can.
func HaveRust() error {
	for _, f := range []string{cargo, rustc} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s: %w (install rustc cargo libstd-rust-dev-wasm32)", f, err)
		}
	}
	out, err := exec.Command(rustc, "--print", "sysroot").Output()
	if err != nil {
		return fmt.Errorf("rustc: %w", err)
	}
	std := filepath.Join(strings.TrimSpace(string(out)), "lib", "rustlib", "wasm32-wasi")
	if _, err := os.Stat(std); err != nil {
		return fmt.Errorf("%s: %w (install libstd-rust-dev-wasm32)", std, err)
	}
	return nil
}

// CErr is C without a testing.TB.
func CErr(srcs ...string) (string, error) {
	root := wasmbuild.Root()
	files := make([]string, len(srcs))
	for i, s := range srcs {
		files[i] = filepath.Join(root, s)
	}
	// The key covers the headers of abi/ and of the sources' folders.
	var hdrs []string
	for _, d := range append([]string{filepath.Join(root, "abi")}, dirsOf(files)...) {
		hs, err := filepath.Glob(filepath.Join(d, "*.h"))
		if err != nil {
			return "", err
		}
		hdrs = append(hdrs, hs...)
	}
	args := []string{"--target=wasm32-wasi", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", filepath.Join(root, "abi"), "-Wl,--strip-all"}
	return cached("c", strings.TrimSuffix(filepath.Base(srcs[0]), ".c"), append(files, hdrs...), clang, args,
		func(out string) error {
			cmd := exec.Command(clang, append(append(args, "-o", out), files...)...)
			if msg, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("clang %s: %v\n%s", strings.Join(srcs, " "), err, msg)
			}
			return nil
		})
}

var crateName = regexp.MustCompile(`(?m)^name\s*=\s*"([^"]+)"`)

// RustErr is Rust without a testing.TB.
func RustErr(dir string) (string, error) {
	root := wasmbuild.Root()
	crate := filepath.Join(root, dir)
	toml, err := os.ReadFile(filepath.Join(crate, "Cargo.toml"))
	if err != nil {
		return "", err
	}
	m := crateName.FindSubmatch(toml)
	if m == nil {
		return "", fmt.Errorf("%s/Cargo.toml names no package", dir)
	}
	name := string(m[1])
	files, err := sources(crate)
	if err != nil {
		return "", err
	}
	sdk, err := sources(filepath.Join(root, RustSDK))
	if err != nil {
		return "", err
	}
	return cached("rust", name, append(files, sdk...), rustc, nil, func(out string) error {
		cache, err := cacheDir()
		if err != nil {
			return err
		}
		target := cargoTarget(cache)
		cmd := exec.Command(cargo, "build", "--offline", "--locked", "--release", "--quiet", "--target", "wasm32-wasi", "--target-dir", target)
		cmd.Dir = crate
		cmd.Env = CargoEnv(cache)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cargo build %s: %v\n%s", dir, err, msg)
		}
		return copyFile(filepath.Join(target, "wasm32-wasi", "release", name+".wasm"), out)
	})
}

// cargoTarget is cargo's target folder under cache for this checkout:
// one per checkout, since cargo leaves the path out of a root package's
// build hash, and takes another checkout's build of the same crate as
// fresh when its sources are older (a stale test binary or module).
func cargoTarget(cache string) string {
	sum := sha256.Sum256([]byte(wasmbuild.Root()))
	return filepath.Join(cache, "cargo-target", hex.EncodeToString(sum[:6]))
}

// CargoTest runs the native unit tests of the cargo crate in dir
// (relative to the module root) and fails tb with their output if one
// fails.
func CargoTest(tb testing.TB, dir string) string {
	tb.Helper()
	return CargoTestEnv(tb, dir, nil)
}

// CargoTestEnv is CargoTest with env added to cargo's environment and
// args after cargo test's own (a test name selects the tests).
func CargoTestEnv(tb testing.TB, dir string, env []string, args ...string) string {
	tb.Helper()
	need(tb, "Rust", HaveRust())
	cache, err := cacheDir()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(cargo, append([]string{"test", "--offline", "--locked", "--target-dir", cargoTarget(cache)}, args...)...)
	cmd.Dir = filepath.Join(wasmbuild.Root(), dir)
	cmd.Env = append(CargoEnv(cache), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("cargo test in %s: %v\n%s", dir, err, out)
	}
	return string(out)
}

// CargoEnv is the environment for Debian's cargo: its rustc, a private
// CARGO_HOME under cache (no user configuration, no registry), and a PATH
// without a rustup toolchain.
func CargoEnv(cache string) []string {
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "RUSTC" || k == "RUSTDOC" || k == "CARGO_HOME" || k == "RUSTUP_TOOLCHAIN" ||
			k == "RUSTFLAGS" || strings.HasPrefix(k, "CARGO_BUILD_") || k == "CARGO_TARGET_DIR" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH=/usr/bin:/bin", "RUSTC="+rustc, "RUSTDOC=/usr/bin/rustdoc",
		"CARGO_HOME="+filepath.Join(cache, "cargo-home"))
}

// dirsOf returns the folders of files, each once.
func dirsOf(files []string) []string {
	var out []string
	for _, f := range files {
		if d := filepath.Dir(f); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// sources lists the files of a crate, without its target folder.
func sources(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "target" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// cached returns the module built from files by tool with args, building
// it with build (into a private file, then renamed) when the cache has no
// module for their hash.
func cached(lang, name string, files []string, tool string, args []string, build func(out string) error) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", lang, name, version(tool), strings.Join(args, " "))
	root := wasmbuild.Root()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	key := hex.EncodeToString(h.Sum(nil)[:8])
	if p, ok := built[key]; ok {
		return p, nil
	}
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, fmt.Sprintf("%s-%s-%s.wasm", lang, name, key))
	if _, err := os.Stat(out); err == nil {
		built[key] = out
		return out, nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	if err := build(tmp); err != nil {
		_ = os.Remove(tmp) // a partial build: the build's error is the one to return
		return "", err
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	built[key] = out
	return out, nil
}

// version returns the tool's --version output (part of every cache key).
func version(tool string) string {
	if v, ok := vers[tool]; ok {
		return v
	}
	out, _ := exec.Command(tool, "--version").Output()
	vers[tool] = string(out)
	return vers[tool]
}

func cacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	d := filepath.Join(base, "skein-guest")
	return d, os.MkdirAll(d, 0o755)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read the built module: %w", err)
	}
	return os.WriteFile(dst, b, 0o644)
}
