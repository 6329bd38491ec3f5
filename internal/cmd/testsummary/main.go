// Command testsummary reads the output of `go test -json` on stdin and
// prints what `make test` shows: each package's result line, the full
// output of every failed test, and at the end one summary line with the
// counts of tests run, skipped and failed, followed by every skipped group
// (internal/testing/testgroup) with how to enable it, and any other skip with its
// reason. It exits 1 when a test, a package or a build failed.
package main

import (
	"fmt"
	"os"
)

func main() {
	s := newSummary(os.Stdout)
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	s.print()
	if s.anyFailed() {
		os.Exit(1)
	}
}
