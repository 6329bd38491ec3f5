package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// The TypeScript client and worker (clients/typescript) and the
// TypeScript worker of examples/order (examples/order/worker-ts), built
// with npm ci and tsc and run against real skein serve processes.

// tsPackages are the npm packages the tests build, in build order (the
// order worker depends on the client by its folder).
var tsPackages = []string{"clients/typescript", "examples/order/worker-ts"}

// needNode returns the paths of node (20 or later) and npm, or skips the
// test (group "node") when the machine lacks them, unless
// $SKEIN_REQUIRE_NODE is set, which makes it fail.
func needNode(t *testing.T) (node, npm string) {
	t.Helper()
	problem := ""
	node, err := exec.LookPath("node")
	if err == nil {
		npm, err = exec.LookPath("npm")
	}
	if err != nil {
		problem = fmt.Sprintf("no node and npm on the PATH (%v)", err)
	} else if major, verr := nodeMajor(node); verr != nil || major < 20 {
		problem = fmt.Sprintf("%s is not Node 20 or later (major %d, %v)", node, major, verr)
	}
	if problem == "" {
		return node, npm
	}
	if os.Getenv("SKEIN_REQUIRE_NODE") != "" {
		t.Fatalf("%s and $SKEIN_REQUIRE_NODE is set", problem)
	}
	testgroup.Skip(t, "node", "Node 20 and npm on the PATH, with the npm registry reachable (SKEIN_REQUIRE_NODE=1 fails instead of skipping)", problem)
	return "", ""
}

// nodeMajor returns the major version `node --version` prints (v20.20.2).
func nodeMajor(node string) (int, error) {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return 0, err
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	return strconv.Atoi(major)
}

var (
	tsOnce sync.Once
	tsDir  string
	tsErr  error
)

// buildTypeScript builds the packages of tsPackages once per test
// binary, in a copy of their sources (the tree keeps no node_modules or
// dist), and returns the copy's root: each package at its path from the
// repository's root under it. npm ci installs what each package-lock.json
// names, from npm's cache once it has been fetched (npm caches by the
// lock's integrity hashes).
func buildTypeScript(t *testing.T, npm string) string {
	t.Helper()
	tsOnce.Do(func() {
		start := time.Now()
		tsDir, tsErr = buildTS(npm, filepath.Join(filepath.Dir(skeinBin), "typescript"))
		t.Logf("npm ci and tsc of %s: %v", strings.Join(tsPackages, ", "), time.Since(start).Round(time.Millisecond))
	})
	if tsErr != nil {
		t.Fatal(tsErr)
	}
	return tsDir
}

func buildTS(npm, dir string) (string, error) {
	root := wasmbuild.Root()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, pkg := range tsPackages {
		dst := filepath.Join(dir, filepath.FromSlash(pkg))
		if err := copySources(filepath.Join(root, filepath.FromSlash(pkg)), dst); err != nil {
			return "", fmt.Errorf("copy %s: %w", pkg, err)
		}
		for _, args := range [][]string{{"ci", "--prefer-offline", "--no-audit", "--no-fund"}, {"run", "build"}} {
			cmd := exec.CommandContext(ctx, npm, args...)
			cmd.Dir = dst
			cmd.Env = append(cleanEnv(), "npm_config_update_notifier=false")
			if out, err := cmd.CombinedOutput(); err != nil {
				return "", fmt.Errorf("npm %s in %s: %w\n%s", strings.Join(args, " "), pkg, err, out)
			}
		}
	}
	return dir, nil
}

// copySources copies the files of the package at src to dst, without
// what npm and tsc make (node_modules, dist).
func copySources(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == "node_modules" || d.Name() == "dist" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}

// nodeTestSummary is what node --test's spec reporter prints at the end.
var nodeTestSummary = regexp.MustCompile(`(?m)^ℹ (tests|pass|fail) (\d+)$`)

// TestTypeScriptClient runs the tests of clients/typescript under
// node --test against two skein serve processes with a token: one with a
// task lease of a minute, one of a second. They cover the Client (deploy,
// start, status, wait, resolve, cancel, the API's errors) and the Worker's
// guarantees: heartbeats keep an attempt past the lease, a cancel aborts
// the activity's signal, a NonRetryableError ends the retries, a stop
// releases the attempt to another worker at once; and, against a scripted
// server, the claim's fields and retries.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "typescript", "npm ci and tsc of clients/typescript, then its tests under node --test (about 40 s on 2 cores, half of it the build)")
	node, npm := needNode(t)
	dir := buildTypeScript(t, npm)
	const token = "ts-s3cret"
	env := []string{"SKEIN_TOKEN=" + token}
	long := startServer(t, filepath.Join(t.TempDir(), "long.db"), env, "--task-lease", "1m")
	short := startServer(t, filepath.Join(t.TempDir(), "short.db"), env, "--task-lease", "1s")
	pkg := filepath.Join(dir, "clients", "typescript")
	files, err := filepath.Glob(filepath.Join(pkg, "dist", "test", "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no compiled tests in %s: %v", pkg, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
	cmd.Dir = pkg
	cmd.Env = append(cleanEnv(), "SKEIN_SERVER="+long.url, "SKEIN_SERVER_SHORT_LEASE="+short.url, "SKEIN_TOKEN="+token,
		"SKEIN_REMOTE_WASM="+wasmbuild.Build(t, remoteWorkflows), "SKEIN_SERVER_WASM="+wasmbuild.Build(t, serverWorkflows),
		"NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	counts := map[string]int{}
	for _, m := range nodeTestSummary.FindAllStringSubmatch(string(out), -1) {
		counts[m[1]], _ = strconv.Atoi(m[2])
	}
	if counts["tests"] == 0 || counts["pass"] != counts["tests"] || counts["fail"] != 0 {
		t.Fatalf("node --test ran %v; want every test passed\n%s", counts, out)
	}
	t.Logf("node --test: %d tests passed", counts["pass"])
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}

// TestOrderExampleTypeScript is TestOrderExample with the TypeScript
// worker of examples/order/worker-ts instead of the Go one: the same
// results, the same recorded outcomes, the same lines printed.
func TestOrderExampleTypeScript(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "typescript", "npm ci and tsc of examples/order/worker-ts, then the order example on it (about 15 s, the build shared with TestTypeScriptClient)")
	node, npm := needNode(t)
	main := filepath.Join(buildTypeScript(t, npm), "examples", "order", "worker-ts", "dist", "main.js")
	testOrderExample(t, func(server, hook string) *workerProc {
		return startWorker(t, node, main, "--server", server, "--id", "shop-ts", "--webhook", hook)
	})
}
