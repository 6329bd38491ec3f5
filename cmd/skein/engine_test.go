package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestEngineFlag: --engine picks the engine of run, serve, check and
// bench. The test binary is built without -tags wasmtime: asking it for
// wasmtime is a usage error that says how to build a skein with it, and
// an unknown engine one that names the choices; wazero runs.
func TestEngineFlag(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./examples/sequence")
	dir := t.TempDir()
	db := filepath.Join(dir, "e.db")
	build := "engine \"wasmtime\" is not in this binary: build skein with it: `go build -tags wasmtime ./cmd/skein` (needs cgo: CGO_ENABLED=1 and a C compiler)"
	for _, args := range [][]string{
		{"run", wasm, "--db", db, "--engine", "wasmtime"},
		{"serve", "--db", db, "--addr", "127.0.0.1:0", "--engine", "wasmtime"},
		{"check", wasm, "--input", `{"n":3}`, "--engine", "wasmtime"},
		{"bench", "--engine", "wazero,wasmtime", "--module", wasm},
	} {
		r := skein(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, `Config.Engine "wasmtime" (--engine): `+build) {
			t.Errorf("want exit %d and the build hint\n%s", exitUsage, r)
		}
	}
	r := skein(t, dir, "run", wasm, "--db", db, "--engine", "v8")
	if want := `unknown engine "v8" (Config.Engine; --engine): want "wazero" or "wasmtime"`; r.code != exitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("want exit %d and %q\n%s", exitUsage, want, r)
	}
	r = skein(t, dir, "run", wasm, "--db", db, "--engine", "wazero", "--input", `{"n":10}`, "--json")
	if v := decodeRun(t, r); r.code != 0 || v.Status != "completed" || string(v.Result) != "55" {
		t.Errorf("--engine wazero: want completed 55\n%s", r)
	}
}
