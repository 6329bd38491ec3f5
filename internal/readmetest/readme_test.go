package readmetest

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/wasmbuild"
)

// shBlocks returns the lines of every ```sh block of a Markdown file, in
// order, one string a block.
func shBlocks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && line == "```sh":
			cur = &strings.Builder{}
		case cur != nil && line == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// copyTree copies the files git tracks (and the untracked ones it does
// not ignore) from root into dir: a fresh clone of the working tree.
func copyTree(t *testing.T, root, dir string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (the README test needs a git checkout)", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src, dst := filepath.Join(root, rel), filepath.Join(dir, rel)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or not a plain file
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, src, dst, fi.Mode())
	}
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestREADME runs every ```sh block of README.md in order, in one shell,
// in a copy of the repository, with `go install` putting skein on a
// PATH of the test's own. `make test` itself is left out (this test is
// part of it). The server the README starts listens on a free port
// instead of 7070, so the test cannot collide with anything on the
// machine; that is the only change made to the text.
func TestREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and the examples in a copy of the repository")
	}
	root := wasmbuild.Root()
	dir := t.TempDir()
	copyTree(t, root, dir)
	blocks := shBlocks(t, filepath.Join(root, "README.md"))
	if len(blocks) < 2 || !strings.Contains(blocks[0], "make demo") || !strings.Contains(blocks[0], "make test") {
		t.Fatalf("README.md must open with a block of `make demo` and `make test`; blocks: %q", blocks)
	}
	port := strconv.Itoa(freePort(t))
	var script strings.Builder
	script.WriteString("set -euo pipefail\nset -x\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n")
	for i, b := range blocks {
		for _, line := range strings.Split(strings.TrimRight(b, "\n"), "\n") {
			if i == 0 && strings.HasPrefix(strings.TrimSpace(line), "make test") {
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
	gobin := filepath.Join(t.TempDir(), "bin")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKEIN_") && !strings.HasPrefix(kv, "GOBIN=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GOBIN="+gobin, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"), "SKEIN_SERVER=http://127.0.0.1:"+port)
	out, err := cmd.CombinedOutput()
	t.Logf("script:\n%s", script.String())
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		`["s2:slow-result","f2:fast-result"]`,            // make demo
		"0 divergences",                                  // skein check
		"ticket:laptop approved by ana",                  // skein wait
		"ticket:chair rejected by bo",                    // the curl walkthrough
		"refund of 40 checked, approved by policy, paid", // skein resume onto v2
		"skein resolve h1.approve --value 'JSON'",        // skein status of the first workflow
		"hello ana, approved by bo",                      // the first workflow
		`"receipt":"rcpt-o-1.2"`,                         // the activities walkthrough
		"charge o-1 attempt 2",                           // its worker, retrying the charge
		"security digest for",                            // the webhook walkthrough
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's commands did not print %q:\n%s", want, out)
		}
	}
}
