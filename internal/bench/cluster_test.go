package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/pgtest"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/postgres"
)

// TestCluster runs the cluster workload tiny, with two workers on SQLite
// and on Postgres ($SKEIN_TEST_POSTGRES), and checks that every run
// completed with its result (Cluster checks each one), and that the
// workers' shares add up to the runs.
func TestCluster(t *testing.T) {
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/bench"))
	if err != nil {
		t.Fatal(err)
	}
	cache := testcache.Shared()
	const runs, steps = 20, 3
	for _, tc := range []struct {
		name string
		open func(t *testing.T) func(context.Context) (store.Store, error)
	}{
		{"sqlite", func(t *testing.T) func(context.Context) (store.Store, error) {
			return SQLiteStores(filepath.Join(t.TempDir(), "cluster.db"), "")
		}},
		{"postgres", func(t *testing.T) func(context.Context) (store.Store, error) {
			return PostgresStores(pgtest.Schema(t, "bench_cluster_"), postgres.Options{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open := tc.open(t)
			ctx := context.Background()
			res, err := Cluster(ctx, ClusterOptions{Module: wasm, Open: open, Workers: 2, Runs: runs, Steps: steps, Concurrency: 2, CacheDir: cache})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res)
			if len(res.Workers) != 2 {
				t.Fatalf("%d worker results, want 2", len(res.Workers))
			}
			sum := 0
			for _, w := range res.Workers {
				sum += w.Completed
				if w.Lost != 0 {
					t.Errorf("%s lost %d leases", w.Owner, w.Lost)
				}
				if w.Claimed < w.Completed {
					t.Errorf("%s completed %d runs with %d leases", w.Owner, w.Completed, w.Claimed)
				}
			}
			if sum != runs {
				t.Errorf("the workers completed %d runs, want %d", sum, runs)
			}
			if res.Elapsed <= 0 || res.StepsPerSec <= 0 || res.RunsPerSec <= 0 {
				t.Errorf("bad figures: %+v", res)
			}

			// Read the store afterwards: every run completed, with its result.
			st, err := open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rs, err := st.Runs(ctx, store.RunFilter{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			measured := 0
			for _, r := range rs {
				if r.Status != store.RunCompleted || (string(r.Result) != "6" && string(r.Result) != "1") { // warm-ups: 1 step
					t.Errorf("run %s: %s %s %s", r.ID, r.Status, r.Result, r.Error)
				}
				if strings.HasPrefix(r.ID, clusterRunPrefix) {
					measured++
				}
			}
			if measured != runs || len(rs) != runs+2 {
				t.Errorf("%d runs in the store (%d measured), want %d and 2 warm-ups", len(rs), measured, runs)
			}
		})
	}
}
