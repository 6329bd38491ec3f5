package host_test

// The performance workloads of docs/PERFORMANCE.md as Go benchmarks, each
// for both store durabilities and with guest interrupts on and off. They
// run through the real host on the workflows of testdata/workflows/bench
// with the driver that `skein bench` uses (internal/bench).
//
//	go test -run '^$' -bench . ./host/                      # everything (make bench)
//	go test -run '^$' -bench 'Sequential/normal' ./host/    # one workload, one mode
//	go test -run '^$' -bench . ./host/ -args -gomemory      # wazero's default linear memory

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/bench"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store/sqlite"
)

var (
	benchNoInterrupt = flag.Bool("nointerrupt", false, "benchmarks: run only the interrupt=off variants")
	benchGoMemory    = flag.Bool("gomemory", false, "benchmarks: wazero's default linear memory instead of the reserve-then-commit allocator")
)

// The sizes of the performance issue.
var sizes = bench.DefaultSizes()

// benchOptions returns the env options for one mode.
func benchOptions(b *testing.B, durability string, interrupt bool) bench.Options {
	b.Helper()
	wasm, err := os.ReadFile(wasmbuild.Build(b, "./testdata/workflows/bench"))
	if err != nil {
		b.Fatal(err)
	}
	cache := testcache.Shared()
	return bench.Options{Module: wasm, Dir: b.TempDir(), Durability: durability, DisableInterrupt: !interrupt, CacheDir: cache, GoMemory: *benchGoMemory}
}

// modes runs fn as a sub-benchmark per durability and interrupt setting;
// withInterruptOff false runs interrupt=on only (where it cannot matter).
func modes(b *testing.B, withInterruptOff bool, fn func(b *testing.B, o bench.Options)) {
	for _, d := range []string{sqlite.DurabilityNormal, sqlite.DurabilityStrict} {
		for _, on := range []bool{true, false} {
			if (on && *benchNoInterrupt) || (!on && !withInterruptOff) {
				continue
			}
			name := fmt.Sprintf("%s/interrupt=%s", d, map[bool]string{true: "on", false: "off"}[on])
			b.Run(name, func(b *testing.B) { fn(b, benchOptions(b, d, on)) })
		}
	}
}

func openEnv(b *testing.B, o bench.Options) *bench.Env {
	b.Helper()
	e, err := bench.Open(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	return e
}

// BenchmarkSequential: one run of 10,000 no-op steps per op. Target
// (normal): >= 150,000 steps/s.
func BenchmarkSequential(b *testing.B) {
	modes(b, true, func(b *testing.B, o bench.Options) {
		e := openEnv(b, o)
		ctx := context.Background()
		if _, err := e.Sequential(ctx, sizes.Steps); err != nil { // warm up
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := e.Sequential(ctx, sizes.Steps); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*sizes.Steps)/b.Elapsed().Seconds(), "steps/s")
	})
}

// BenchmarkConcurrent: 1,000 runs x 10 no-op steps started together per
// op. Targets (normal): >= 10,000 steps/s and >= 1,000 runs/s.
func BenchmarkConcurrent(b *testing.B) {
	modes(b, true, func(b *testing.B, o bench.Options) {
		e := openEnv(b, o)
		ctx := context.Background()
		if _, err := e.Concurrent(ctx, 50, sizes.RunSteps, sizes.Workers); err != nil { // warm up
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := e.Concurrent(ctx, sizes.Runs, sizes.RunSteps, sizes.Workers); err != nil {
				b.Fatal(err)
			}
		}
		s := b.Elapsed().Seconds()
		b.ReportMetric(float64(b.N*sizes.Runs*sizes.RunSteps)/s, "steps/s")
		b.ReportMetric(float64(b.N*sizes.Runs)/s, "runs/s")
	})
}

// BenchmarkFanOut: one run spawning 1,000 tasks with skein.Go, each one
// step, joined, per op. Target (normal): <= 100 ms.
func BenchmarkFanOut(b *testing.B) {
	modes(b, true, func(b *testing.B, o bench.Options) {
		e := openEnv(b, o)
		ctx := context.Background()
		if _, err := e.FanOut(ctx, sizes.Tasks); err != nil { // warm up
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := e.FanOut(ctx, sizes.Tasks); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
	})
}

// BenchmarkReplay: a stored 10,000-step history resumed per op: the run is
// suspended (its instance evicted), Drive loads the journal, replays it
// from the top in a new instance and suspends the run again at its
// pending timer. Target (normal): >= 500,000 steps/s.
func BenchmarkReplay(b *testing.B) {
	modes(b, true, func(b *testing.B, o bench.Options) {
		e := openEnv(b, o)
		ctx := context.Background()
		id, err := e.StoreHistory(ctx, sizes.Steps)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := e.Replay(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*sizes.Steps)/b.Elapsed().Seconds(), "steps/s")
	})
}

// BenchmarkVerifyReplay: host.Replay (records nothing) of a completed
// 10,000-step run per op.
func BenchmarkVerifyReplay(b *testing.B) {
	modes(b, true, func(b *testing.B, o bench.Options) {
		e := openEnv(b, o)
		ctx := context.Background()
		id, err := e.CompletedHistory(ctx, sizes.Steps)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := e.VerifyReplay(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*sizes.Steps)/b.Elapsed().Seconds(), "steps/s")
	})
}

// BenchmarkActivation: one new run per op, from Start to its first op
// reaching the host, with the module compiled and cached. Targets
// (normal): p50 <= 5 ms, p99 <= 20 ms.
func BenchmarkActivation(b *testing.B) {
	modes(b, true, func(b *testing.B, o bench.Options) {
		e := openEnv(b, o)
		ctx := context.Background()
		for i := 0; i < 5; i++ { // warm up
			if _, err := e.Activate(ctx); err != nil {
				b.Fatal(err)
			}
		}
		var total, firstOp, hostPart []time.Duration
		for b.Loop() {
			a, err := e.Activate(ctx)
			if err != nil {
				b.Fatal(err)
			}
			total, firstOp, hostPart = append(total, a.Total), append(firstOp, a.FirstOp), append(hostPart, a.Host)
		}
		b.ReportMetric(msOf(bench.Percentile(total, 50)), "p50-ms")
		b.ReportMetric(msOf(bench.Percentile(total, 99)), "p99-ms")
		b.ReportMetric(msOf(bench.Percentile(firstOp, 50)), "first-op-p50-ms")
		b.ReportMetric(msOf(bench.Percentile(firstOp, 99)), "first-op-p99-ms")
		b.ReportMetric(msOf(bench.Percentile(hostPart, 50)), "p50-before-instantiate-ms")
	})
}

// BenchmarkFirstCompile: Deploy of the bench module on a new host with no
// compilation cache (compile, checks, describe run, store write) per op;
// with cache=disk, on a new host whose cache folder holds the module.
func BenchmarkFirstCompile(b *testing.B) {
	modes(b, false, func(b *testing.B, o bench.Options) {
		for _, cached := range []bool{false, true} {
			b.Run(map[bool]string{false: "cache=none", true: "cache=disk"}[cached], func(b *testing.B) {
				co := o
				if !cached {
					co.CacheDir = ""
				}
				ctx := context.Background()
				if cached {
					if _, err := bench.Compile(ctx, co); err != nil { // fill the cache
						b.Fatal(err)
					}
				}
				for b.Loop() {
					if _, err := bench.Compile(ctx, co); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

// BenchmarkLiveInstance: 100 runs held live at once (blocked on an
// activity) per op; reports the growth of the process's RSS per instance.
// Target: <= 5 MiB each.
func BenchmarkLiveInstance(b *testing.B) {
	modes(b, false, func(b *testing.B, o bench.Options) {
		e := openEnv(b, o)
		ctx := context.Background()
		if _, err := e.LiveInstances(ctx, sizes.Live); err != nil { // warm up
			b.Fatal(err)
		}
		var sum int64
		for b.Loop() {
			per, err := e.LiveInstances(ctx, sizes.Live)
			if err != nil {
				b.Fatal(err)
			}
			sum += per
		}
		b.ReportMetric(float64(sum)/float64(b.N)/(1<<20), "MiB/instance")
	})
}

// BenchmarkSuspendedRuns: creates 100,000 suspended runs in the store
// (once, whatever b.N) and reports the RSS of a restarted host with none
// and with all of them, and of the host that wrote them (its SQLite page
// cache full). Target: unchanged by the count, <= 200 MiB.
func BenchmarkSuspendedRuns(b *testing.B) {
	modes(b, false, func(b *testing.B, o bench.Options) {
		e := openEnv(b, o)
		ctx := context.Background()
		var points []bench.SuspendedPoint
		for i := 0; b.Loop(); i++ {
			if i > 0 {
				continue // one pass: the store keeps the runs
			}
			var err error
			if points, err = e.Suspended(ctx, []int{0, sizes.Suspended / 10, sizes.Suspended}); err != nil {
				b.Fatal(err)
			}
		}
		first, last := points[0], points[len(points)-1]
		b.ReportMetric(float64(first.RSS)/(1<<20), "MiB-rss-0-runs")
		b.ReportMetric(float64(last.RSS)/(1<<20), "MiB-rss-100k-runs")
		b.ReportMetric(float64(last.WriterRSS)/(1<<20), "MiB-rss-100k-runs-writer")
		b.ReportMetric(float64(last.DBBytes)/float64(max(1, last.Runs))/1024, "KiB-disk/run")
	})
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkActivities: durable activity calls, in process and remote
// (a worker in this process over loopback HTTP; `skein bench` runs it as a
// process of its own): one run of 2,000 calls, and 500 runs x 10 calls
// started together, per op. Targets (normal, interrupts on): in process
// >= 20,000 calls/s each; remote >= 3,000 sequential, >= 8,000 concurrent.
func BenchmarkActivities(b *testing.B) {
	modes(b, false, func(b *testing.B, o bench.Options) {
		for _, remote := range []bool{false, true} {
			e := openEnv(b, o)
			ctx := context.Background()
			kind := map[bool]string{false: "inprocess", true: "remote"}[remote]
			for _, c := range []struct {
				name              string
				runs, calls, work int
			}{{"sequential", 1, sizes.Calls, 1}, {"concurrent", sizes.CallRuns, sizes.RunCalls, sizes.Workers}} {
				b.Run(kind+"/"+c.name, func(b *testing.B) {
					if _, err := e.Activities(ctx, remote, min(c.runs, 20), c.calls, c.work); err != nil { // warm up
						b.Fatal(err)
					}
					for b.Loop() {
						if _, err := e.Activities(ctx, remote, c.runs, c.calls, c.work); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.N*c.runs*c.calls)/b.Elapsed().Seconds(), "calls/s")
				})
			}
		}
	})
}

// BenchmarkStart: one Start of a new run per op (created, not driven),
// naming the bench module (3.5 MB) by its hash and by its name, as
// `POST /v1/runs` does. Both read only the module's record: the two must
// cost about the same.
func BenchmarkStart(b *testing.B) {
	for _, by := range []string{"hash", "name"} {
		b.Run("by="+by, func(b *testing.B) {
			e := openEnv(b, benchOptions(b, sqlite.DurabilityNormal, true))
			mod := map[string]string{"hash": e.Module.Hash, "name": e.Module.Name}[by]
			ctx := context.Background()
			n := 0
			for b.Loop() {
				n++
				id := fmt.Sprintf("start-%d", n)
				if _, err := e.Host.Start(ctx, host.StartOptions{Module: mod, Workflow: "steps", Input: []byte(`{"n":1}`), ID: id, Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
