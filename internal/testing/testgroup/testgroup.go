// Package testgroup names the groups of tests that skip: the slow ones
// that `make test` leaves to `make test-all` (and .ci/run), and those that
// need something a machine may lack (a browser, Postgres, the C and Rust
// toolchains). Every skip says its group and how to enable it, in a form
// internal/cmd/testsummary collects into the summary `make test` prints.
package testgroup

import (
	"fmt"
	"os"
	"testing"
)

// AllEnv is the environment variable that enables the slow groups:
// `make test-all` sets it to 1, `make test` leaves it unset.
const AllEnv = "SKEIN_TEST_ALL"

// Skip skips tb: reason says why, group names its group and enable how
// to run it. The bracketed tail is what internal/cmd/testsummary parses.
func Skip(tb testing.TB, group, enable, reason string) {
	tb.Helper()
	tb.Skip(Message(group, enable, reason))
}

// Message is the text of a skip of group: the reason, then the group and
// how to enable it in brackets.
func Message(group, enable, reason string) string {
	return fmt.Sprintf("%s [skip group %s; enable: %s]", reason, group, enable)
}

// Slow skips tb unless $SKEIN_TEST_ALL is 1: tb is in group, a slow
// group (cross-builds, the heaviest scenarios) that `make test-all` and
// .ci/run run and `make test` leaves out.
func Slow(tb testing.TB, group, reason string) {
	tb.Helper()
	if os.Getenv(AllEnv) == "1" {
		return
	}
	Skip(tb, group, "make test-all (or "+AllEnv+"=1 go test ...)", reason)
}
