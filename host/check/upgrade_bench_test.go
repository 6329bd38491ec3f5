package check

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// BenchmarkCheckUpgrade checks 10,000 suspended runs of 20 ops each (19
// steps and a pending durable timer of testdata/workflows/bench's steps)
// in a SQLite store against the same module (the target: 30 s on
// 2 cores); -short checks 1,000. The store is built once, outside the
// timing: one run driven by the real host, its journal copied to the
// others.
func BenchmarkCheckUpgrade(b *testing.B) {
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	ctx := context.Background()
	h := newLiveHost(b, host.Config{Evict: host.EvictIdle, IdleThreshold: 10 * time.Millisecond})
	m := h.deploy(b, "./testdata/workflows/bench")
	tmpl, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: "steps", ID: "template", Input: json.RawMessage(`{"n":19,"sleep_ms":3600000}`)})
	if err != nil {
		b.Fatal(err)
	}
	if tmpl, err = h.Drive(ctx, tmpl.ID, host.DriveOptions{}); err != nil || tmpl.Status != store.RunSuspended {
		b.Fatalf("template: %v %s", err, tmpl.Status)
	}
	outs, err := h.st.Outcomes(ctx, tmpl.ID)
	if err != nil {
		b.Fatal(err)
	}
	if len(outs) != 20 {
		b.Fatalf("template has %d records, want 20", len(outs))
	}
	st := h.st
	copyRuns(b, st, tmpl, outs, n-1)
	wasm := wasmOf(b, "./testdata/workflows/bench")
	o := UpgradeOptions{Store: st, Workflow: "steps", CacheDir: cacheDir, DisableInterrupt: *benchNoInterrupt}
	b.ResetTimer()
	cpu0 := cpuTime()
	var r *UpgradeReport
	for b.Loop() {
		if r, err = Upgrade(ctx, wasm, o); err != nil || !r.OK() || len(r.Runs) != n {
			b.Fatalf("%v %+v", err, r.Summary())
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/check")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/run")
	// The CPU time the process spent (every core), which a machine shared
	// with other work does not inflate as it does the elapsed time.
	cpu := cpuTime() - cpu0
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/check")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*n), "cpu-µs/run")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// copyRuns stores n copies of run with its journal outs.
func copyRuns(b *testing.B, st store.Store, run store.Run, outs []store.Outcome, n int) {
	ctx := context.Background()
	var batch store.Batch
	for i := range n {
		c := run
		c.ID = fmt.Sprintf("r%05d", i)
		if _, _, err := st.CreateRun(ctx, c); err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			batch.Outcomes = append(batch.Outcomes, store.RunOutcome{RunID: c.ID, Outcome: o})
		}
		if len(batch.Outcomes) >= 10_000 || i == n-1 {
			if err := st.Commit(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = store.Batch{}
		}
	}
}
