package readmetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/guestbuild"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// pageTimeout bounds the commands of one page.
const pageTimeout = 5 * time.Minute

// TestPagesListed holds pages to the tree: every Markdown file git
// tracks that has a ```sh block is in pages, once, and every page listed
// has one.
func TestPagesListed(t *testing.T) {
	root := wasmbuild.Root()
	var withBlocks []string
	for _, rel := range trackedFiles(t, root) {
		if !strings.HasSuffix(rel, ".md") {
			continue
		}
		if len(shBlocks(t, filepath.Join(root, rel))) > 0 {
			withBlocks = append(withBlocks, rel)
		}
	}
	listed := map[string]bool{}
	for _, p := range pages {
		if listed[p.path] {
			t.Errorf("%s is listed twice in pages", p.path)
		}
		listed[p.path] = true
		if !slices.Contains(withBlocks, p.path) {
			t.Errorf("%s is listed in pages but has no ```sh block (or is not in the tree)", p.path)
		}
		if len(p.want) == 0 {
			t.Errorf("%s: pages must say what its commands print (want)", p.path)
		}
	}
	for _, p := range pages {
		if line := skeinBeforeInstall(shBlocks(t, filepath.Join(root, p.path))); line != "" {
			t.Errorf("%s runs skein before `go install ./cmd/skein` (a reader's PATH may hold none, or an old one): %q", p.path, line)
		}
	}
	for _, rel := range withBlocks {
		if !listed[rel] {
			t.Errorf("%s has ```sh blocks but is not in pages (internal/testing/readmetest/pages_test.go): add it with what its commands print, or make its blocks ```text if they are not meant to be run", rel)
		}
	}
}

// TestPages runs every ```sh block of each page of pages in order, in
// one shell, in a fresh copy of the repository of its own, with `go
// install` putting skein on a PATH that the pages share (installSkein
// fills it first). README.md runs first, alone; the other pages then
// run in parallel. The pages' Go builds run with -trimpath (GOFLAGS), so
// that the copies, at different paths, share what the Go build cache
// holds. A `make test` line is left out (this test
// is part of it). A server a page starts listens on a free port instead
// of 7070, so the test cannot collide with anything on the machine;
// that is the only change made to the text.
func TestPages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and the examples in copies of the repository")
	}
	root := wasmbuild.Root()
	blocks := shBlocks(t, filepath.Join(root, "README.md"))
	if len(blocks) == 0 || !strings.Contains(blocks[0], "make demo") || !strings.Contains(blocks[0], "make test") {
		t.Fatalf("README.md must open with a block of `make demo` and `make test`; blocks: %q", blocks)
	}
	if pages[0].path != "README.md" {
		t.Fatalf("pages must start with README.md, not %s", pages[0].path)
	}
	base := t.TempDir()
	gobin := filepath.Join(base, "bin")
	installSkein(t, root, gobin)
	for i, p := range pages {
		dir := filepath.Join(base, strconv.Itoa(i))
		t.Run(p.path, func(t *testing.T) {
			if i > 0 {
				t.Parallel()
			}
			testPage(t, root, dir, gobin, p)
		})
	}
}

// installSkein runs `go install ./cmd/skein` once into gobin, which
// every page then shares, as its pages would: each page's own `go
// install` (TestPagesListed holds every page to one) finds the binary
// up to date, as -trimpath makes a copy's build the same as root's, and
// does not link it again (about 4 CPU-seconds a page).
func installSkein(t *testing.T, root, gobin string) {
	t.Helper()
	cmd := exec.Command("go", "install", "./cmd/skein")
	cmd.Dir = root
	cmd.Env = pageEnv(gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/skein: %v\n%s", err, out)
	}
}

// pageEnv is the environment of a page's commands: the test's, less
// skein's variables, with gobin first on the PATH and -trimpath added to
// GOFLAGS (so that the copies of the tree, at different paths, share
// what the Go build cache holds).
func pageEnv(gobin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKEIN_") && !strings.HasPrefix(kv, "GOBIN=") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "GOFLAGS=") {
			env = append(env, kv)
		}
	}
	goflags := strings.TrimSpace(os.Getenv("GOFLAGS") + " -trimpath")
	return append(env, "GOBIN="+gobin, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOFLAGS="+goflags)
}

// testPage runs the blocks of p in a copy of root made in dir, and
// checks what they print.
func testPage(t *testing.T, root, dir, gobin string, p page) {
	for _, tool := range p.needs {
		switch tool {
		case "C":
			guestbuild.RequireC(t)
		case "Rust":
			guestbuild.RequireRust(t)
		default:
			t.Fatalf("%s needs %q: want C or Rust", p.path, tool)
		}
	}
	tree := filepath.Join(dir, "skein")
	copyTree(t, root, tree)
	out := runPage(t, tree, gobin, p.path)
	for _, want := range p.want {
		if !strings.Contains(out, want) {
			t.Errorf("the commands of %s did not print %q:\n%s", p.path, want, out)
		}
	}
}

// runPage runs the ```sh blocks of the page rel in dir, one shell for
// the page, and returns what they printed; it fails t if they fail.
func runPage(t *testing.T, dir, gobin, rel string) string {
	t.Helper()
	blocks := shBlocks(t, filepath.Join(dir, rel))
	port := strconv.Itoa(freePort(t))
	script := pageScript(blocks, port)
	ctx, cancel := context.WithTimeout(context.Background(), pageTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(pageEnv(gobin), "SKEIN_SERVER=http://127.0.0.1:"+port)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s: %d blocks in %s; script:\n%s", rel, len(blocks), time.Since(start).Round(time.Millisecond), script)
	if err != nil {
		t.Fatalf("the commands of %s failed: %v\n%s", rel, err, out)
	}
	return string(out)
}

// skeinCommand matches a line that runs skein from the PATH.
var skeinCommand = regexp.MustCompile(`(^|[;&|(]|\$\()\s*skein\s`)

// skeinBeforeInstall returns the first line of blocks that runs skein
// from the PATH before a line installs it (`go install ./cmd/skein` or
// `make install`), or "". TestPages installs skein once for all pages,
// so this check is what holds each page to installing it itself.
func skeinBeforeInstall(blocks []string) string {
	for _, b := range blocks {
		for _, line := range strings.Split(b, "\n") {
			cmd, _, _ := strings.Cut(line, "#")
			f := strings.Fields(cmd)
			if len(f) >= 3 && f[0] == "go" && f[1] == "install" && f[2] == "./cmd/skein" || len(f) >= 2 && f[0] == "make" && f[1] == "install" {
				return ""
			}
			if skeinCommand.MatchString(cmd) {
				return strings.TrimSpace(line)
			}
		}
	}
	return ""
}

// pageScript is the bash script of a page's blocks: every line as
// written, but a `make test` line left out and 127.0.0.1:7070 replaced
// by the test's port, which `skein serve` is given with --addr.
func pageScript(blocks []string, port string) string {
	var script strings.Builder
	script.WriteString("set -euo pipefail\nset -x\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n")
	for _, b := range blocks {
		for _, line := range strings.Split(strings.TrimRight(b, "\n"), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "make" && strings.HasPrefix(f[1], "test") {
				continue
			}
			line = strings.ReplaceAll(line, "127.0.0.1:7070", "127.0.0.1:"+port)
			if strings.HasPrefix(line, "skein serve ") && !strings.Contains(line, "--addr") {
				line = strings.Replace(line, "skein serve ", "skein serve --addr 127.0.0.1:"+port+" ", 1)
			}
			script.WriteString(line + "\n")
		}
	}
	script.WriteString("wait\n")
	return script.String()
}
