//go:build !wasip1

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// buildPlugins builds the named plugins to wasm into a new folder, as the
// program expects them: NAME.wasm.
func buildPlugins(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(wasmbuild.Build(t, "./examples/embed/plugins/"+n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".wasm"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runEmbed(t *testing.T, o options) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, events bytes.Buffer
	if err := run(ctx, o, &out, &events); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nevents:\n%s", err, out.String(), events.String())
	}
	return out.String(), events.String()
}

// The program loads three plugins, grants each its activities, runs them
// and prints their outcomes: greet completes, review completes once the
// program settles its promise, sneaky fails on the activity it is not
// granted. A second start on the same database executes nothing.
func TestEmbed(t *testing.T) {
	dir := buildPlugins(t, "greet", "review", "sneaky")
	o := options{dir: dir, db: filepath.Join(t.TempDir(), "embed.db"), cacheDir: testcache.Shared()}
	out, events := runEmbed(t, o)
	t.Logf("stdout:\n%s", out)
	for _, re := range []string{
		`(?m)^plugin greet \([0-9a-f]{12}\) may call: upper$`,
		`(?m)^  run greet-[0-9a-f]{8}: completed "hello, ADA"$`,
		`(?m)^    1 +call +upper +ok +"ADA"$`,
		`(?m)^    2 +step +greeting +ok +"hello, ADA"$`,
		`(?m)^plugin review \([0-9a-f]{12}\) may call: wordcount$`,
		`(?m)^  run review-[0-9a-f]{8}: completed "5 words, approved by the editor"$`,
		`(?m)^    verdict +promise +promise +ok +"approved by the editor"$`,
		`(?m)^plugin sneaky \(([0-9a-f]{12})\) may call: upper, wordcount$`,
		`(?m)^  run sneaky-[0-9a-f]{8}: failed: activity "secrets" is not granted to module sneaky \([0-9a-f]{12}\); it may call: upper, wordcount \(called at key "2"\)$`,
		`(?m)^    1 +call +upper +ok +"EVE"$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stdout does not match %s", re)
		}
	}
	if strings.Contains(out, "s3cr3t") {
		t.Errorf("the ungranted activity ran:\n%s", out)
	}
	for _, want := range []string{": started (replay false)", ": op 1 call upper pending", ": op 1 call upper ok", ": suspended", ": completed", ": failed"} {
		if !strings.Contains(events, want) {
			t.Errorf("events lack %q:\n%s", want, events)
		}
	}

	again, events2 := runEmbed(t, o)
	if again != out {
		t.Errorf("second start printed\n%s\nwant\n%s", again, out)
	}
	if events2 != "" {
		t.Errorf("second start executed something:\n%s", events2)
	}
}

// goTool returns the go command, or skips the test without one (go
// test puts its own toolchain's bin first on PATH).
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: no go toolchain on PATH to build binaries with")
	}
	return p
}

// goBuild builds pkg (relative to the module root) without cgo, stripped,
// for goos/goarch, and returns the binary's path.
func goBuild(t *testing.T, goTool, pkg, goos, goarch, dir string) string {
	t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("%s-%s-%s", filepath.Base(pkg), goos, goarch))
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = wasmbuild.Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 GOOS=%s GOARCH=%s go build %s: %v\n%s", goos, goarch, pkg, err, msg)
	}
	return out
}

// The skein CLI and this program build without cgo for the edge and
// desktop targets (cross-compiled, not executed).
func TestCrossBuild(t *testing.T) {
	testgroup.Slow(t, "cross-builds", "cross-compiles skein and examples/embed for three targets (minutes with a cold build cache)")
	if testing.Short() {
		t.Skip("skipped in -short mode: cross-compiles six binaries")
	}
	gt := goTool(t)
	dir := t.TempDir()
	for _, target := range [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}} {
		for _, pkg := range []string{"./cmd/skein", "./examples/embed"} {
			start := time.Now()
			bin := goBuild(t, gt, pkg, target[0], target[1], dir)
			fi, err := os.Stat(bin)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%-16s %s/%s: %5.1f MiB (-trimpath -ldflags='-s -w', built in %s)", pkg, target[0], target[1],
				float64(fi.Size())/(1<<20), time.Since(start).Round(100*time.Millisecond))
		}
	}
}

// The program, with one plugin deployed and its run finished, idles at a
// small resident size and stops cleanly on SIGINT.
func TestMemoryAtRest(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("skipped: reads /proc")
	}
	gt := goTool(t)
	plugins := buildPlugins(t, "greet")
	tmp := t.TempDir()
	bin := goBuild(t, gt, "./examples/embed", runtime.GOOS, runtime.GOARCH, tmp)
	cmd := exec.Command(bin, "-dir", plugins, "-db", filepath.Join(tmp, "embed.db"), "-cache-dir", testcache.Shared(), "-idle", "-quiet")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for idle := false; !idle; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the program ended before idling: %s", stderr.String())
			}
			idle = strings.HasPrefix(l, "idle:")
		case <-deadline:
			t.Fatal("the program did not idle within 30s")
		}
	}
	time.Sleep(time.Second) // at rest
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
			t.Logf("host at rest (SQLite file store, one module deployed, its run done): %s", strings.Join(strings.Fields(l), " "))
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for range lines {
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the program did not stop within 15s of SIGINT")
	}
}
