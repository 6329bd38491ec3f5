package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/bench"
	"github.com/skeinrun/skein/internal/guestbuild"
)

// skein bench --module runs every workload on the Rust build of the bench
// workflows (testdata/rust/bench), so Go and Rust modules can be measured
// side by side: every workload gives positive figures.
func TestBenchRustModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every workload (a few seconds)")
	}
	module := guestbuild.Rust(t, "testdata/rust/bench")
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"bench", "--quick", "--durability", "normal", "--json", "--quiet",
		"--module", module, "--dir", t.TempDir()}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var f struct {
			Workload string  `json:"workload"`
			Metric   string  `json:"metric"`
			Value    float64 `json:"value"`
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil || f.Workload == "" {
			t.Fatalf("bad figure %q (%v)", line, err)
		}
		if f.Value <= 0 {
			t.Errorf("figure %s/%s is %v", f.Workload, f.Metric, f.Value)
		}
		seen[f.Workload] = true
	}
	for _, w := range bench.Workloads {
		if !seen[w] {
			t.Errorf("no figure for workload %s\n%s", w, stdout.String())
		}
	}
}
