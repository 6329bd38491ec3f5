package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/storetest"
)

func openFile(t testing.TB, opts Options) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "skein.db")
	d, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return d, path
}

func TestStoreFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		d, _ := openFile(t, Options{})
		return d
	})
}

func TestStoreFileStrict(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		d, _ := openFile(t, Options{Durability: DurabilityStrict})
		return d
	})
}

func TestStoreMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		d, err := Open(t.Context(), ":memory:", Options{})
		if err != nil {
			t.Fatalf("Open(:memory:): %v", err)
		}
		return d
	})
}

func TestMemoryDatabasesAreSeparate(t *testing.T) {
	ctx := t.Context()
	a, err := Open(ctx, ":memory:", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, ":memory:", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, _, err := a.CreateRun(ctx, store.Run{ID: "r", ModuleHash: "h", Workflow: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second in-memory database sees the first one's run: %v", err)
	}
}

func TestSchemaVersion(t *testing.T) {
	d, path := openFile(t, Options{})
	var v int
	if err := d.wdb.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != len(migrations) {
		t.Errorf("user_version = %d, want %d", v, len(migrations))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopening at the current version applies nothing and works.
	d, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	d.Close()

	// A database written by a newer skein is refused.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", len(migrations)+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = Open(t.Context(), path, Options{})
	var tooNew *SchemaTooNewError
	if !errors.As(err, &tooNew) {
		t.Fatalf("Open of a too-new database: error = %v, want SchemaTooNewError", err)
	}
	if tooNew.Version != len(migrations)+1 || tooNew.Supported != len(migrations) {
		t.Errorf("SchemaTooNewError = %+v", tooNew)
	}
	if msg := err.Error(); !strings.Contains(msg, "newer") || !strings.Contains(msg, path) {
		t.Errorf("error message %q should name the path and say the schema is newer", msg)
	}
}

func TestReopenKeepsData(t *testing.T) {
	for _, durability := range []string{"", DurabilityNormal, DurabilityStrict} {
		t.Run("durability="+durability, func(t *testing.T) {
			ctx := t.Context()
			d, path := openFile(t, Options{Durability: durability})
			m := store.Module{Hash: "abc", Name: "mod", Bytes: []byte("wasm"), ABIVersion: 1, Workflows: []string{"w"}}
			if err := d.PutModule(ctx, m); err != nil {
				t.Fatal(err)
			}
			if _, _, err := d.CreateRun(ctx, store.Run{ID: "r1", ModuleHash: "abc", Workflow: "w", Seed: 1<<63 + 5}); err != nil {
				t.Fatal(err)
			}
			var b store.Batch
			for i := range 100 {
				b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: "r1", Outcome: store.Outcome{
					Key: fmt.Sprintf("t0.%d", i), Kind: "step", Function: "f", Status: store.OutcomeOK, Seq: int64(i + 1),
				}})
			}
			b.Runs = []store.Run{{ID: "r1", Status: store.RunCompleted, Result: []byte(`"done"`)}}
			if err := d.Commit(ctx, b); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}

			d, err := Open(ctx, path, Options{Durability: durability})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer d.Close()
			got, err := d.Module(ctx, "mod")
			if err != nil || string(got.Bytes) != "wasm" {
				t.Errorf("module after reopen = %+v, %v", got, err)
			}
			r, err := d.Run(ctx, "r1")
			if err != nil || r.Status != store.RunCompleted || string(r.Result) != `"done"` || r.Seed != 1<<63+5 {
				t.Errorf("run after reopen = %+v, %v", r, err)
			}
			os, err := d.Outcomes(ctx, "r1")
			if err != nil || len(os) != 100 {
				t.Errorf("outcomes after reopen: %d, %v", len(os), err)
			}
		})
	}
}

func TestDurabilityOption(t *testing.T) {
	for _, tc := range []struct {
		durability string
		sync       int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{
		{"", 1},
		{DurabilityNormal, 1},
		{DurabilityStrict, 2},
	} {
		d, _ := openFile(t, Options{Durability: tc.durability})
		var sync int
		var mode string
		if err := d.wdb.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if err := d.wdb.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if sync != tc.sync || mode != "wal" {
			t.Errorf("durability %q: synchronous = %d, journal_mode = %s; want %d, wal", tc.durability, sync, mode, tc.sync)
		}
		d.Close()
	}
	for _, bad := range []string{"bogus", "Strict", "full"} {
		_, err := Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), Options{Durability: bad})
		if err == nil {
			t.Errorf("durability %q accepted", bad)
			continue
		}
		for _, want := range []string{bad, "normal", "strict"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("durability %q: error %q does not mention %q", bad, err, want)
			}
		}
	}
	if _, err := Open(t.Context(), "", Options{}); err == nil {
		t.Errorf("empty path accepted")
	}
}

func TestCommitCanceledContext(t *testing.T) {
	d, _ := openFile(t, Options{})
	defer d.Close()
	if _, _, err := d.CreateRun(t.Context(), store.Run{ID: "r", ModuleHash: "h", Workflow: "w"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := d.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{{RunID: "r", Outcome: store.Outcome{Key: "k"}}}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with canceled ctx: %v, want context.Canceled", err)
	}
	if os, _ := d.Outcomes(t.Context(), "r"); len(os) != 0 {
		t.Errorf("canceled commit landed")
	}
}

func TestCommitAfterCloseIsErrClosed(t *testing.T) {
	d, _ := openFile(t, Options{})
	d.Close()
	err := d.Commit(t.Context(), store.Batch{Runs: []store.Run{{ID: "r"}}})
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Close: %v, want ErrClosed", err)
	}
}

// TestApplyGroup drives the writer's group logic directly: a group mixing
// a run creation, batches that depend on it, a bad batch and a canceled one.
func TestApplyGroup(t *testing.T) {
	for _, withBad := range []bool{false, true} {
		t.Run(fmt.Sprintf("bad=%v", withBad), func(t *testing.T) {
			d, _ := openFile(t, Options{})
			defer d.Close()
			ctx := t.Context()
			if _, _, err := d.CreateRun(ctx, store.Run{ID: "r1", ModuleHash: "h", Workflow: "w"}); err != nil {
				t.Fatal(err)
			}
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			mk := func(ctx context.Context, b store.Batch) *request {
				return &request{ctx: ctx, batch: &b, done: make(chan error, 1)}
			}
			create := &request{ctx: ctx, done: make(chan error, 1), apply: func(w *wtx) error {
				_, err := w.tx.ExecContext(w.ctx, `INSERT INTO runs (id, module_hash, workflow, status, seed, created_at, updated_at) VALUES ('r2', 'h', 'w', 'pending', 0, 1, 1)`)
				return err
			}}
			group := []*request{
				mk(ctx, store.Batch{Outcomes: outcomes("r1", "a", 0, 40)}),
				create,
				mk(ctx, store.Batch{Outcomes: outcomes("r2", "b", 0, 5), Runs: []store.Run{{ID: "r2", Status: store.RunRunning}}}),
				mk(canceled, store.Batch{Outcomes: outcomes("r1", "c", 0, 3)}),
			}
			bad := mk(ctx, store.Batch{Outcomes: append(outcomes("r1", "d", 0, 3), outcomes("nope", "d", 3, 1)...)})
			if withBad {
				group = append(group, bad)
			}
			group = append(group, mk(ctx, store.Batch{Outcomes: outcomes("r1", "e", 40, 2), Runs: []store.Run{{ID: "r1", Status: store.RunSuspended, WakeAt: 9}}}))
			d.applyGroup(slices.Clone(group))

			for i, r := range group {
				err := <-r.done
				switch {
				case r.ctx == canceled:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("request %d (canceled): %v", i, err)
					}
				case r == bad:
					if err == nil {
						t.Errorf("request %d (bad): nil error", i)
					}
				default:
					if err != nil {
						t.Errorf("request %d: %v", i, err)
					}
				}
			}
			o1, _ := d.Outcomes(ctx, "r1")
			o2, _ := d.Outcomes(ctx, "r2")
			if len(o1) != 42 || len(o2) != 5 {
				t.Errorf("outcomes: r1 %d, r2 %d; want 42, 5", len(o1), len(o2))
			}
			r1, _ := d.Run(ctx, "r1")
			r2, _ := d.Run(ctx, "r2")
			if r1.Status != store.RunSuspended || r1.WakeAt != 9 || r2.Status != store.RunRunning {
				t.Errorf("runs: r1 %s %d, r2 %s", r1.Status, r1.WakeAt, r2.Status)
			}
		})
	}
}

// outcomes returns n outcomes of run with keys prefix.0 ... prefix.n-1 and
// settle sequence seq0+1 ... seq0+n.
func outcomes(run, prefix string, seq0, n int) []store.RunOutcome {
	out := make([]store.RunOutcome, n)
	for i := range out {
		out[i] = store.RunOutcome{RunID: run, Outcome: store.Outcome{
			Key: fmt.Sprintf("%s.%d", prefix, i), Kind: "step", Function: "fetch", Status: store.OutcomeOK,
			Value: []byte(`{"status":200,"body":"hello"}`), Attempts: 1, Seq: int64(seq0 + i + 1),
			VTime: time.Now().UnixNano(),
		}}
	}
	return out
}

// BenchmarkCommitOutcomes measures one Commit of 1,000 outcomes, each of a
// fresh run (keys and settle sequence as a real run writes them).
func BenchmarkCommitOutcomes(b *testing.B) {
	const n = 1000
	d, _ := openFile(b, Options{})
	defer d.Close()
	ctx := context.Background()
	batches := make([]store.Batch, b.N)
	for i := range batches {
		id := fmt.Sprintf("run-%06d", i)
		if _, _, err := d.CreateRun(ctx, store.Run{ID: id, ModuleHash: "h", Workflow: "w"}); err != nil {
			b.Fatal(err)
		}
		batches[i] = store.Batch{Outcomes: outcomes(id, "t0", 0, n)}
	}
	b.ResetTimer()
	for i := range b.N {
		if err := d.Commit(ctx, batches[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkCommitConcurrent(b *testing.B) {
	for _, durability := range []string{DurabilityNormal, DurabilityStrict} {
		b.Run(durability, func(b *testing.B) {
			const n = 10
			d, _ := openFile(b, Options{Durability: durability})
			defer d.Close()
			ctx := context.Background()
			const runs = 64
			for i := range runs {
				if _, _, err := d.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r%d", i), ModuleHash: "h", Workflow: "w"}); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					batch := store.Batch{Outcomes: outcomes(fmt.Sprintf("r%d", i%runs), fmt.Sprintf("t%d", i), int(i)*n, n)}
					if err := d.Commit(ctx, batch); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// oldDatabase makes a database file of schema version v (its first v
// migrations) and returns its path, open without the store for the test
// to fill; the test closes it before it opens the store.
func oldDatabase(t *testing.T, v int) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:v] {
		if _, err := raw.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		t.Fatal(err)
	}
	return path, raw
}

// TestMigrationWaiting: a database from before migration 5 with runs that
// a settlement or a cancellation waits for finds them due once opened.
func TestMigrationWaiting(t *testing.T) {
	path, raw := oldDatabase(t, 4)
	if _, err := raw.Exec(storetest.WaitingSeedSQL); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	d, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	storetest.CheckWaitingMigrated(t, d)
}

// BenchmarkClaimIdle measures one ClaimRuns that finds nothing due, with
// 0 and 100,000 suspended runs waiting on later timers in the store: what
// each worker pays per poll. Its cost must not grow with the runs.
func BenchmarkClaimIdle(b *testing.B) {
	for _, n := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("suspended=%d", n), func(b *testing.B) {
			d, _ := openFile(b, Options{})
			defer d.Close()
			ctx := context.Background()
			later := time.Now().Add(time.Hour).UnixNano()
			err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
				_, err := w.tx.ExecContext(w.ctx, `WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n + 1 < ?)
INSERT INTO runs (id, module_hash, workflow, status, seed, wake_at, created_at, updated_at)
SELECT printf('r%06d', n), 'h', 'w', 'suspended', 0, ?, 1, 1 FROM i`, n, later)
				return err
			}})
			if err != nil && n > 0 {
				b.Fatal(err)
			}
			for b.Loop() {
				cs, err := d.ClaimRuns(ctx, "w1", time.Now().UnixNano(), time.Minute, 16)
				if err != nil || len(cs) != 0 {
					b.Fatalf("ClaimRuns = %d runs, %v; want none", len(cs), err)
				}
			}
		})
	}
}
