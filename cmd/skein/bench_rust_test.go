package main

import (
	"testing"

	"github.com/skeinrun/skein/internal/testing/guestbuild"
)

// skein bench --module runs every workload on the Rust build of the bench
// workflows (testdata/rust/bench), so Go and Rust modules can be measured
// side by side: every workload gives positive figures.
func TestBenchRustModule(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs every workload (a few seconds)")
	}
	benchQuickJSON(t, guestbuild.Rust(t, "testdata/rust/bench"))
}
