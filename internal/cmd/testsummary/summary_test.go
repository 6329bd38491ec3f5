package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// The summary of a real `go test -json` run of the fixture package
// counts its tests, prints the failure, and lists the skipped groups
// with how to enable them and the other skip with its reason; with the
// slow group enabled, its tests run.
func TestSummaryOfFixture(t *testing.T) {
	run := func(env ...string) (string, bool) {
		cmd := exec.Command("go", "test", "-count=1", "-json", "./internal/cmd/testsummary/testdata/fixture")
		cmd.Dir = wasmbuild.Root()
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.Output() // the fixture fails on purpose
		var b bytes.Buffer
		s := newSummary(&b)
		if err := s.read(bytes.NewReader(out)); err != nil {
			t.Fatal(err)
		}
		s.print()
		return b.String(), s.anyFailed()
	}
	got, failed := run(testgroup.AllEnv + "=")
	for _, want := range []string{
		"fixture failure text",
		"=== FAIL internal/cmd/testsummary/testdata/fixture.TestFail: its output\n",
		"tests: 4 run, 4 skipped, 1 failed",
		"slowest tests: internal/cmd/testsummary/testdata/fixture.",
		"skipped group fixture-browser (1 tests; enable: apt-get install chromium): internal/cmd/testsummary/testdata/fixture.TestNeedsBrowser\n",
		"skipped group fixture-slow (2 tests; enable: make test-all (or SKEIN_TEST_ALL=1 go test ...)): internal/cmd/testsummary/testdata/fixture.TestSlowOne, internal/cmd/testsummary/testdata/fixture.TestSub/slow\n",
		"skipped internal/cmd/testsummary/testdata/fixture.TestOtherSkip: fixture_test.go:27: not on this platform\n",
		"FAIL\tgithub.com/skeinrun/skein/internal/cmd/testsummary/testdata/fixture",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if !failed {
		t.Errorf("a run with a failed test is not reported as failed:\n%s", got)
	}
	if strings.Contains(got, "=== RUN   TestPass") {
		t.Errorf("a passing test's output is printed:\n%s", got)
	}
	got, _ = run(testgroup.AllEnv + "=1")
	if want := "tests: 6 run, 2 skipped, 1 failed"; !strings.Contains(got, want) || strings.Contains(got, "fixture-slow") {
		t.Errorf("with %s=1 the slow group should run (%q):\n%s", testgroup.AllEnv, want, got)
	}
}
