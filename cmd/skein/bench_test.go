package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/bench"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestBenchQuickJSON runs every workload of `skein bench` at tiny sizes
// (--quick) and checks that it prints one JSON figure per line with the
// documented fields, for every workload.
func TestBenchQuickJSON(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs every workload (a few seconds)")
	}
	benchQuickJSON(t, wasmbuild.Build(t, "./testdata/workflows/bench"))
}

// benchQuickJSON runs `skein bench --quick --json` on module and checks
// that every workload gives positive figures with the documented fields.
// It runs the skein binary, not runMain: the memory workload measures
// its process's RSS, which the other tests of this process would move.
func benchQuickJSON(t *testing.T, module string) {
	t.Helper()
	r := skeinEnv(t, nil, "bench", "--quick", "--durability", "normal", "--json", "--quiet",
		"--module", module, "--dir", t.TempDir())
	wantExit(t, r, 0)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var f map[string]any
		dec := json.NewDecoder(strings.NewReader(line))
		if err := dec.Decode(&f); err != nil || dec.More() {
			t.Fatalf("not one JSON object per line: %q (%v)", line, err)
		}
		w, _ := f["workload"].(string)
		m, _ := f["metric"].(string)
		v, ok := f["value"].(float64)
		if w == "" || m == "" || !ok || f["durability"] != "normal" || f["interrupt"] != "on" {
			t.Fatalf("bad figure %q", line)
		}
		// At --quick sizes the memory workload holds 4 instances, whose
		// share of the process's RSS is within its noise (figures of
		// -0.02 MiB were seen): that figure need only be a number.
		if v <= 0 && (w != "memory" || m != "live_instance_rss_mib") {
			t.Errorf("figure %s/%s is %v", w, m, v)
		}
		seen[w] = true
	}
	for _, w := range bench.Workloads {
		if !seen[w] {
			t.Errorf("no figure for workload %s\n%s", w, r.stdout)
		}
	}
}

// TestBenchText prints one line per figure, with its databases in a
// --dir it creates; bad flags are usage errors.
func TestBenchText(t *testing.T) {
	t.Parallel()
	module := wasmbuild.Build(t, "./testdata/workflows/bench")
	var stdout, stderr bytes.Buffer
	dir := filepath.Join(t.TempDir(), "new", "dbs")
	code := runMain(context.Background(), []string{"bench", "--workload", "sequential", "--durability", "strict", "--interrupt", "off",
		"--steps", "50", "--repeat", "1", "--quiet", "--module", module, "--dir", dir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	fields := strings.Fields(stdout.String())
	if len(fields) != 7 || fields[0] != "sequential" || fields[1] != "steps_per_s" || fields[3] != "durability=strict" || fields[4] != "interrupt=off" || fields[5] != "reuse=on" || fields[6] != "engine=wazero" {
		t.Fatalf("want one line `sequential steps_per_s N durability=strict interrupt=off reuse=on engine=wazero`, got %q", stdout.String())
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("--dir %s was not created: %v", dir, err)
	}
	for _, args := range [][]string{
		{"bench", "--workload", "nope"},
		{"bench", "--durability", "fast"},
		{"bench", "--interrupt", "maybe"},
		{"bench", "--engine", "v8"},
		{"bench", "extra"},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := runMain(context.Background(), args, &stdout, &stderr); code != exitUsage {
			t.Errorf("skein %s: exit %d, want %d\n%s", strings.Join(args, " "), code, exitUsage, stderr.String())
		}
	}
	stderr.Reset()
	if code := runMain(context.Background(), []string{"bench", "--module", t.TempDir() + "/missing.wasm"}, &stdout, &stderr); code != exitFailed ||
		!strings.Contains(stderr.String(), "make bench-wasm") {
		t.Errorf("missing module: exit %d, stderr %q", code, stderr.String())
	}
}

// TestBenchRemoteWorkerProcess runs the remote-activities workload from
// the real binary, whose worker is a process of its own (skein
// bench-worker), and checks both figures.
func TestBenchRemoteWorkerProcess(t *testing.T) {
	t.Parallel()
	r := skein(t, t.TempDir(), "bench", "--quick", "--durability", "normal", "--json", "--quiet",
		"--workload", "remote-activities", "--module", wasmbuild.Build(t, "./testdata/workflows/bench"))
	if r.code != 0 {
		t.Fatalf("skein bench: %s", r)
	}
	for _, metric := range []string{`"metric":"seq_calls_per_s"`, `"metric":"conc_calls_per_s"`} {
		if !strings.Contains(r.stdout, metric) {
			t.Errorf("skein bench printed no %s:\n%s", metric, r)
		}
	}
}
