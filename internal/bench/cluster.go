package bench

// The cluster workload: several workers (hosts running Host.Work, each
// with its own store handle, like several `skein serve` processes) share
// one database and split a batch of runs between them.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/postgres"
	"github.com/skeinrun/skein/store/sqlite"
)

// ClusterOptions configure Cluster.
type ClusterOptions struct {
	// Module is the bench workflow module (testdata/workflows/bench built
	// for wasip1). Required.
	Module []byte
	// Open opens a new handle on the shared database; Cluster calls it
	// once per worker and closes every handle it got. Required: see
	// SQLiteStores and PostgresStores. The database should be empty (the
	// run ids are fixed).
	Open func(ctx context.Context) (store.Store, error)
	// Workers is the number of workers; default 1.
	Workers int
	// Runs and Steps: Runs runs of the "steps" workflow, each of Steps
	// no-op steps; defaults 1,000 and 10.
	Runs, Steps int
	// Concurrency is each worker's host.WorkOptions.Concurrency (0: the
	// host's default, 8*GOMAXPROCS, as `skein serve`).
	Concurrency int
	// Poll is each worker's host.WorkOptions.Poll; default 20ms. A worker
	// is signalled at once by the runs created through its own host, and
	// sees those created through the others' at its next poll.
	Poll time.Duration
	// LeaseTTL is each worker's host.WorkOptions.LeaseTTL (0: the default).
	LeaseTTL time.Duration
	// Creators is how many goroutines create the runs; default 8.
	Creators int
	// DonePoll is how often the store is read to see which runs have
	// completed; default 10ms. It bounds how late the end is observed.
	DonePoll time.Duration
	// Timeout bounds the whole workload; default 10 minutes.
	Timeout time.Duration
	// CacheDir is each host's on-disk compilation cache
	// (host.Config.CacheDir). Empty: compiled modules are cached in memory.
	CacheDir string
	// DisableInterrupt runs guests without wazero's close-on-context-done
	// checks (host.Config.DisableInterrupt).
	DisableInterrupt bool
}

// ClusterResult is what Cluster measured.
type ClusterResult struct {
	// Elapsed is the wall time from the first run's creation to the moment
	// the last completion was seen in the store (at most DonePoll late).
	Elapsed time.Duration
	// Created is the wall time from the first run's creation to the last
	// (the workers drive runs meanwhile).
	Created time.Duration
	// StepsPerSec is Runs*Steps/Elapsed and RunsPerSec Runs/Elapsed.
	StepsPerSec, RunsPerSec float64
	// Workers has one entry per worker, in order.
	Workers []WorkerResult
}

// WorkerResult is one worker's share of a Cluster workload, read from its
// host's metrics (Host.WriteMetrics), the warm-up run excluded.
type WorkerResult struct {
	Owner string // its host.WorkOptions.Owner
	// Completed is how many runs it drove to completion
	// (skein_runs_ended_total{namespace="default",status="completed"}).
	Completed int
	// Claimed is how many leases it took (skein_leases_claimed_total);
	// Lost how many of them it lost while driving
	// (skein_leases_lost_total).
	Claimed, Lost int
}

// String formats the result on one line: throughput and each worker's
// share of the completed runs.
func (r ClusterResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f steps/s, %.0f runs/s, %v (created in %v); completed per worker:",
		r.StepsPerSec, r.RunsPerSec, r.Elapsed.Round(time.Millisecond), r.Created.Round(time.Millisecond))
	for _, w := range r.Workers {
		fmt.Fprintf(&b, " %s=%d", w.Owner, w.Completed)
	}
	return b.String()
}

// SQLiteStores returns a ClusterOptions.Open that opens the SQLite
// database file path (created by the first call) with durability
// (sqlite.DurabilityNormal when empty).
func SQLiteStores(path, durability string) func(context.Context) (store.Store, error) {
	return func(ctx context.Context) (store.Store, error) {
		return sqlite.Open(ctx, path, sqlite.Options{Durability: durability})
	}
}

// PostgresStores returns a ClusterOptions.Open that connects to the
// PostgreSQL database of dsn (a search_path parameter selects the schema)
// with o, as `skein serve --store` does with the zero Options.
func PostgresStores(dsn string, o postgres.Options) func(context.Context) (store.Store, error) {
	return func(ctx context.Context) (store.Store, error) {
		return postgres.Open(ctx, dsn, o)
	}
}

// Run ids of the cluster workload: the measured runs are clusterRunPrefix
// and a zero-padded index, so they list (store.Runs orders by id) in
// creation order; the warm-up runs sort before them.
const (
	clusterRunPrefix  = "run-"
	clusterWarmPrefix = "pre-"
)

// Cluster measures several workers sharing one database: it opens a store
// handle and a host per worker (the bench module is deployed through the
// first host only; the others load it from the shared store), warms each
// host up with one run of one step driven in place (so the module is
// compiled and instantiated once on every host before the clock starts),
// then starts Host.Work on every worker with distinct owners.
//
// With the workers running and idle, it creates Runs runs of the steps
// workflow on Creators goroutines, spread round-robin over the hosts
// (Host.Start, which signals that host's worker), and reads the shared
// store every DonePoll until every run has completed, checking each
// result (1+2+...+Steps); a failed, canceled or diverged run ends it with
// an error. The time measured runs from the first creation to the last
// completion seen; creation and execution overlap, as when clients submit
// work to a running cluster. Then it stops the workers, reads each one's
// share from its host's metrics, and closes everything.
func Cluster(ctx context.Context, o ClusterOptions) (ClusterResult, error) {
	if len(o.Module) == 0 {
		return ClusterResult{}, errors.New("bench: cluster: no module (build testdata/workflows/bench for wasip1: make bench-wasm)")
	}
	if o.Open == nil {
		return ClusterResult{}, errors.New("bench: cluster: no Open function for the store")
	}
	o.Workers = defaultInt(o.Workers, 1)
	o.Runs = defaultInt(o.Runs, 1000)
	o.Steps = defaultInt(o.Steps, 10)
	o.Creators = min(defaultInt(o.Creators, 8), o.Runs)
	if o.Poll <= 0 {
		o.Poll = 20 * time.Millisecond
	}
	if o.DonePoll <= 0 {
		o.DonePoll = 10 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	// One store handle and one host per worker.
	stores := make([]store.Store, 0, o.Workers)
	hosts := make([]*host.Host, 0, o.Workers)
	defer func() {
		// A benchmark's scratch hosts and stores, measured already.
		for _, h := range hosts {
			_ = h.Close(context.Background())
		}
		for _, st := range stores {
			_ = st.Close()
		}
	}()
	for i := 0; i < o.Workers; i++ {
		st, err := o.Open(ctx)
		if err != nil {
			return ClusterResult{}, fmt.Errorf("bench: cluster: open the store of worker %d: %w", i, err)
		}
		stores = append(stores, st)
		h, err := host.New(ctx, host.Config{
			Store:            st,
			CacheDir:         o.CacheDir,
			DisableInterrupt: o.DisableInterrupt,
			Logger:           slog.New(slog.DiscardHandler),
			GuestOutput:      io.Discard,
		})
		if err != nil {
			return ClusterResult{}, fmt.Errorf("bench: cluster: host of worker %d: %w", i, err)
		}
		hosts = append(hosts, h)
	}
	mod, err := hosts[0].Deploy(ctx, "bench", o.Module)
	if err != nil {
		return ClusterResult{}, fmt.Errorf("bench: cluster: deploy: %w", err)
	}

	// Warm-up: a run of one step per host, driven by that host, which
	// finds the module in the shared store and compiles it.
	before := make([]map[string]float64, o.Workers)
	for i, h := range hosts {
		in, _ := json.Marshal(stepsIn{N: 1})
		id := fmt.Sprintf("%s%d", clusterWarmPrefix, i)
		if _, err := h.Start(ctx, host.StartOptions{Module: mod.Hash, Workflow: wfSteps, Input: in, ID: id, Seed: 1}); err != nil {
			return ClusterResult{}, fmt.Errorf("bench: cluster: warm-up run on worker %d: %w", i, err)
		}
		r, err := h.Drive(ctx, id, host.DriveOptions{})
		if err != nil {
			return ClusterResult{}, fmt.Errorf("bench: cluster: warm-up run on worker %d: %w", i, err)
		}
		if r.Status != store.RunCompleted {
			return ClusterResult{}, fmt.Errorf("bench: cluster: warm-up run on worker %d is %s (%s)", i, r.Status, r.Error)
		}
		if before[i], err = hostCounters(ctx, h); err != nil {
			return ClusterResult{}, err
		}
	}

	// The workers.
	owners := make([]string, o.Workers)
	workCtx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stopWorkers := func() {
		stopWork()
		wg.Wait()
	}
	defer stopWorkers()
	for i, h := range hosts {
		owners[i] = fmt.Sprintf("worker-%d", i+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.Work(workCtx, host.WorkOptions{Concurrency: o.Concurrency, Poll: o.Poll, Owner: owners[i], LeaseTTL: o.LeaseTTL}); err != nil {
				slog.Error("bench: a worker stopped", "owner", owners[i], "err", err)
			}
		}()
	}

	// The measured part: create every run, wait until all completed.
	width := len(strconv.Itoa(o.Runs - 1))
	ids := make([]string, o.Runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%0*d", clusterRunPrefix, width, i)
	}
	in, err := json.Marshal(stepsIn{N: o.Steps})
	if err != nil {
		return ClusterResult{}, err
	}
	t0 := time.Now()
	created := make(chan error, 1)
	var createdIn time.Duration
	var creating sync.WaitGroup
	creating.Add(1)
	defer func() { // on an early return: no Start may outlive the hosts
		cancel()
		creating.Wait()
	}()
	go func() {
		defer creating.Done()
		err := parallel(ctx, o.Runs, o.Creators, func(i int) error {
			_, err := hosts[i%len(hosts)].Start(ctx, host.StartOptions{Module: mod.Hash, Workflow: wfSteps, Input: in, ID: ids[i], Seed: 1})
			return err
		})
		createdIn = time.Since(t0)
		created <- err
	}()
	end, err := awaitCluster(ctx, stores[0], ids, o.Steps*(o.Steps+1)/2, o.DonePoll, created)
	if err != nil {
		return ClusterResult{}, err
	}
	if err := <-created; err != nil { // nil already if awaitCluster saw it
		return ClusterResult{}, fmt.Errorf("bench: cluster: create runs: %w", err)
	}
	stopWorkers()

	res := ClusterResult{Elapsed: end.Sub(t0), Created: createdIn}
	res.StepsPerSec = float64(o.Runs*o.Steps) / res.Elapsed.Seconds()
	res.RunsPerSec = float64(o.Runs) / res.Elapsed.Seconds()
	for i, h := range hosts {
		after, err := hostCounters(ctx, h)
		if err != nil {
			return ClusterResult{}, err
		}
		delta := func(k string) int { return int(after[k] - before[i][k]) }
		res.Workers = append(res.Workers, WorkerResult{
			Owner:     owners[i],
			Completed: delta(`skein_runs_ended_total{namespace="default",status="completed"}`),
			Claimed:   delta(`skein_leases_claimed_total{namespace="default"}`),
			Lost:      delta(`skein_leases_lost_total{namespace="default"}`),
		})
	}
	return res, nil
}

// awaitCluster reads st every poll until every run of ids has completed
// with the result want, and returns when it saw the last one. ids sort in
// creation order, so each read starts after the longest prefix of ids seen
// completed: it reads about the runs in flight, not all of them. A run
// that failed, was canceled or diverged ends the wait with an error, as
// does an error received on created (the creation of the runs).
func awaitCluster(ctx context.Context, st store.Store, ids []string, want int, poll time.Duration, created chan error) (time.Time, error) {
	const page = 1000
	wantResult := strconv.Itoa(want)
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	done := make([]bool, len(ids))
	low, seen := 0, 0
	t := time.NewTicker(poll)
	defer t.Stop()
	for n := 0; ; n++ {
		after := ""
		if low > 0 {
			after = ids[low-1]
		}
		for {
			rs, err := st.Runs(ctx, store.RunFilter{Status: store.RunCompleted, After: after, Limit: page})
			if err != nil {
				return time.Time{}, fmt.Errorf("bench: cluster: list completed runs: %w", err)
			}
			for _, r := range rs {
				i, ok := index[r.ID]
				if !ok || done[i] {
					continue
				}
				if string(r.Result) != wantResult {
					return time.Time{}, fmt.Errorf("bench: cluster: run %s returned %s, want %s", r.ID, r.Result, wantResult)
				}
				done[i] = true
				seen++
			}
			if len(rs) < page {
				break
			}
			after = rs[len(rs)-1].ID
		}
		if seen == len(ids) {
			return time.Now(), nil
		}
		for low < len(ids) && done[low] {
			low++
		}
		if n%10 == 9 { // now and then: a run that will never complete
			for _, s := range []store.RunStatus{store.RunFailed, store.RunCanceled, store.RunDiverged} {
				rs, err := st.Runs(ctx, store.RunFilter{Status: s, Limit: 1})
				if err != nil {
					return time.Time{}, fmt.Errorf("bench: cluster: list %s runs: %w", s, err)
				}
				if len(rs) > 0 {
					return time.Time{}, fmt.Errorf("bench: cluster: run %s is %s: %s", rs[0].ID, s, rs[0].Error)
				}
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("bench: cluster: %d of %d runs completed: %w", seen, len(ids), ctx.Err())
		case err := <-created:
			if err != nil {
				return time.Time{}, fmt.Errorf("bench: cluster: create runs: %w", err)
			}
			created <- nil // for the caller
			created = nil  // every run exists; stop watching
		case <-t.C:
		}
	}
}

// hostCounters reads a host's metrics (Host.WriteMetrics) into a map from
// each sample's name and labels, as printed, to its value.
func hostCounters(ctx context.Context, h *host.Host) (map[string]float64, error) {
	var buf bytes.Buffer
	if err := h.WriteMetrics(ctx, &buf); err != nil {
		return nil, fmt.Errorf("bench: cluster: metrics: %w", err)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

func defaultInt(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}
