package host_test

// The cluster workload (internal/bench.Cluster) as Go benchmarks: workers
// (hosts running Work, each with its own store handle, like `skein serve`
// processes) sharing one database drive 1,000 runs x 10 no-op steps.
//
//	go test -run '^$' -bench Cluster ./host/                                      # SQLite only
//	SKEIN_TEST_POSTGRES=postgres://... go test -run '^$' -bench Cluster ./host/   # and Postgres

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/bench"
	"github.com/skeinrun/skein/internal/testing/pgtest"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/postgres"
	"github.com/skeinrun/skein/store/sqlite"
)

var (
	clusterConcurrency = flag.Int("clusterconcurrency", 0, "BenchmarkCluster: each worker's Work concurrency (0: the host's default, 8*GOMAXPROCS)")
	clusterPGConns     = flag.Int("clusterpgconns", 0, "BenchmarkCluster: each Postgres worker's pool size (0: pgxpool's default)")
)

// BenchmarkCluster: 1,000 runs x 10 no-op steps per op, on fresh storage,
// created through the workers' hosts while they run (round-robin) and
// driven by their Work loops until all completed: one worker on SQLite
// (normal durability), and one and three workers sharing a Postgres
// schema ($SKEIN_TEST_POSTGRES; skipped without it). It reports the
// aggregate steps/s and runs/s, and ns/op is the measured wall time alone
// (first run created to last completion seen), not the setup of each op
// (hosts, deploy, warm-up), which B/op and allocs/op do include. The
// split of the runs between the workers is logged.
func BenchmarkCluster(b *testing.B) {
	for _, v := range []struct {
		name     string
		workers  int
		postgres bool
	}{
		{"sqlite-1worker", 1, false},
		{"postgres-1worker", 1, true},
		{"postgres-3workers", 3, true},
	} {
		b.Run(v.name, func(b *testing.B) {
			if v.postgres {
				pgtest.DSN(b) // skips without $SKEIN_TEST_POSTGRES
			}
			o := benchOptions(b, sqlite.DurabilityNormal, true)
			ctx := context.Background()
			var elapsed time.Duration
			for i := 0; b.Loop(); i++ {
				var open func(context.Context) (store.Store, error)
				if v.postgres {
					open = bench.PostgresStores(pgtest.Schema(b, "bench_cluster_"), postgres.Options{MaxConns: int32(*clusterPGConns)})
				} else {
					open = bench.SQLiteStores(filepath.Join(o.Dir, fmt.Sprintf("cluster-%d.db", i)), sqlite.DurabilityNormal)
				}
				res, err := bench.Cluster(ctx, bench.ClusterOptions{
					Module: o.Module, Open: open, Workers: v.workers, Runs: sizes.Runs, Steps: sizes.RunSteps,
					Concurrency: *clusterConcurrency, CacheDir: o.CacheDir, DisableInterrupt: o.DisableInterrupt,
				})
				if err != nil {
					b.Fatal(err)
				}
				b.Log(res)
				elapsed += res.Elapsed
			}
			s := elapsed.Seconds()
			b.ReportMetric(float64(b.N*sizes.Runs*sizes.RunSteps)/s, "steps/s")
			b.ReportMetric(float64(b.N*sizes.Runs)/s, "runs/s")
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/op")
		})
	}
}
