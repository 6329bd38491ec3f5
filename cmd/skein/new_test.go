package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestNewSkeleton: `skein new` writes a module that builds to wasm with
// its own Makefile, passes its own skeintest test as generated, and runs
// on a real server from deploy through start, settle and wait. Without
// --skein-dir it finds the checkout skein was built from, and says so.
func TestNewSkeleton(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := skein(t, dir, "new", "hello")
	wantExit(t, r, 0, "wrote hello/", "replace", wasmbuild.Root(), "the checkout skein was built from", "make build test")
	mod := filepath.Join(dir, "hello")
	gomod, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "replace github.com/skeinrun/skein => " + wasmbuild.Root() + "\n"; !strings.Contains(string(gomod), want) {
		t.Errorf("go.mod lacks %q:\n%s", want, gomod)
	}
	wantExit(t, skein(t, dir, "new", "hello"), 1, "hello exists already")
	wantExit(t, skein(t, dir, "new", "Hello World"), 2, `NAME "Hello World"`)
	wantExit(t, skein(t, dir, "new", "other", "--skein-dir", dir), 1, "--skein-dir", "no go.mod of module github.com/skeinrun/skein")

	// Its own build and test, as a newcomer runs them, offline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "build", "test")
	cmd.Dir = mod
	cmd.Env = append(cleanEnv(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make build test in the new module: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ok  \thello") {
		t.Errorf("the module's test did not pass:\n%s", out)
	}

	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	wantExit(t, s.cli(t, nil, "deploy", filepath.Join(mod, "hello.wasm")), 0, "module hello deployed", "workflows: hello")
	wantExit(t, s.cli(t, nil, "start", "hello", "--input", `{"name":"ana"}`, "--id", "h1"), 0)
	wantExit(t, s.cli(t, nil, "wait", "h1", "--issued", "approve"), 0)
	wantExit(t, s.cli(t, nil, "resolve", "h1.approve", "--value", `{"approved":true,"by":"bo"}`), 0)
	wantExit(t, s.cli(t, nil, "wait", "h1"), 0, `"hello ana, approved by bo"`)
}
