package host

// Micro-benchmarks of the engine under the workloads of
// workload_bench_test.go: instantiation of a Go guest, and linear memory
// growth with each allocator.

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// UseGoMemory gives the test hosts created from now on
// Config.GoMemory until the returned function restores the
// reserve-then-commit allocator. Benchmarks only: not safe while hosts
// are created concurrently.
func UseGoMemory() (restore func()) {
	old := testGoMemory
	testGoMemory = true
	return func() { testGoMemory = old }
}

// memoryModes runs fn with the reserve-then-commit allocator and with
// wazero's default memory.
func memoryModes(b *testing.B, fn func(b *testing.B)) {
	for _, m := range []string{"reserve", "go"} {
		b.Run("memory="+m, func(b *testing.B) {
			if m == "go" {
				defer UseGoMemory()()
			}
			fn(b)
		})
	}
}

// BenchmarkInstantiate instantiates the bench module (compiled and cached)
// in describe mode per op: wazero's instantiation, the Go runtime's start
// and package initialisation (a command, or a reactor with snapshots off)
// or the restore of the snapshot (a reactor), or the reset of the
// instance the op before used (a reactor with reuse), up to the guest's third
// host call, where the host ends it. This is the guest's share of a
// run's activation.
func BenchmarkInstantiate(b *testing.B) {
	memoryModes(b, func(b *testing.B) {
		for _, c := range []struct {
			build           string
			noSnap, noReuse bool
		}{{"command", false, false}, {"reactor", true, false}, {"reactor+snapshot", false, true}, {"reactor+snapshot+reuse", false, false}} {
			for _, interrupt := range []bool{true, false} {
				b.Run(fmt.Sprintf("build=%s/interrupt=%v", c.build, interrupt), func(b *testing.B) {
					benchInstantiate(b, c.build != "command", Config{DisableInterrupt: !interrupt, DisableSnapshots: c.noSnap, DisableInstanceReuse: c.noReuse})
				})
			}
		}
	})
}

// benchInstantiate runs BenchmarkInstantiate on the bench module built
// as a command or a reactor, on a host with cfg.
func benchInstantiate(b *testing.B, reactor bool, cfg Config) {
	h := newTestHost(b, cfg)
	build := wasmbuild.Build
	if reactor {
		build = wasmbuild.BuildReactor
	}
	wasm, err := os.ReadFile(build(b, "./testdata/workflows/bench"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cm, _, err := h.modules.Compile(ctx, "bench", wasm, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer h.modules.Release(cm)
	for b.Loop() {
		x := exec.NewDescribe(h.Host.execHost())
		x.Instantiate(ctx, cm)
		if !x.Described {
			b.Fatal("the module did not reach its invocation", x.Failure)
		}
	}
}
