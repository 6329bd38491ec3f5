package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestRunLimitFlags: the limit flags of `skein run` reach the host, and a
// run over a limit fails with the limit named.
func TestRunLimitFlags(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "every limit flag of skein run against a real run (about 25 s)")
	wasm := wasmbuild.Build(t, "./testdata/workflows/limits")
	dir := t.TempDir()
	db := filepath.Join(dir, "limits.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workflow", "spin", "--max-run-without-yield", "200ms"},
			"workflow code ran 200ms without yielding to the host (limit Config.MaxRunWithoutYield = 200ms; --max-run-without-yield)"},
		{[]string{"--workflow", "opflood", "--input", "20", "--max-ops", "10"},
			"the run issued more than 10 ops (limit Config.MaxOps = 10; --max-ops)"},
		{[]string{"--workflow", "taskflood", "--input", "20", "--max-tasks", "10"},
			"the run has more than 10 live tasks (limit Config.MaxTasks = 10; --max-tasks)"},
		{[]string{"--workflow", "bigresult", "--input", "2000", "--max-payload-bytes", "1000"},
			"the result of task 1 is 2000 bytes (limit Config.MaxPayloadBytes = 1000 bytes; --max-payload-bytes)"},
		{[]string{"--workflow", "busy", "--input", `{"N":3,"MS":300}`, "--max-execution-cpu", "300ms"},
			"the execution ran workflow code for more than 300ms (limit Config.MaxExecutionCPU = 300ms; --max-execution-cpu)"},
		{[]string{"--workflow", "busy", "--input", `{"N":3,"MS":300}`, "--max-execution-time", "400ms"},
			"the execution ran for more than 400ms (limit Config.MaxExecutionTime = 400ms; --max-execution-time)"},
		{[]string{"--workflow", "tree", "--input", `{"Depth":3,"Fan":1}`, "--max-child-depth", "2"},
			`child run "tree" at key "1" would be 3 levels deep (limit Config.MaxChildDepth = 2; --max-child-depth)`},
		{[]string{"--workflow", "tree", "--input", `{"Depth":1,"Fan":4}`, "--max-children", "3"},
			"the run started more than 3 child runs (limit Config.MaxChildren = 3; --max-children)"},
		{[]string{"--workflow", "membomb", "--max-memory-mib", "64"},
			"the module ran out of linear memory (limit Config.MemoryLimitPages = 1024 pages (64 MiB); --max-memory-mib)"},
	} {
		r := skein(t, dir, append([]string{"run", wasm, "--db", db}, tc.args...)...)
		if r.code != exitFailed || !strings.Contains(r.stdout, "error: "+tc.want) {
			t.Errorf("want exit %d and error %q\n%s", exitFailed, tc.want, r)
		}
	}
	r := skein(t, dir, "run", wasm, "--db", db, "--workflow", "spin", "--max-module-bytes", "1000")
	if r.code != exitFailed || !strings.Contains(r.stderr, "(limit Config.MaxModuleBytes = 1000 bytes; --max-module-bytes)") {
		t.Errorf("--max-module-bytes: \n%s", r)
	}
}
