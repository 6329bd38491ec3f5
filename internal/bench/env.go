// Package bench holds the performance workloads of skein: the same code
// drives them from `skein bench` and from the Go benchmarks that
// `make bench` runs (host/workload_bench_test.go). Every workload runs
// through the real host (on wazero, or wasmtime: Options.Engine), against a real SQLite file, with the
// workflows of testdata/workflows/bench. docs/PERFORMANCE.md describes the
// workloads, their targets and the figures measured.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/postgres"
	"github.com/skeinrun/skein/store/sqlite"
)

// Workflow and activity names of the bench module.
const (
	wfSteps  = "steps"
	wfFanout = "fanout"
	wfCall   = "call"

	actFirst = "bench.first" // records when the first op of a run reaches the host
	actHold  = "bench.hold"  // blocks until released: keeps an instance live
)

// stepsIn is the input of the steps and fanout workflows.
type stepsIn struct {
	N       int `json:"n"`
	SleepMS int `json:"sleep_ms,omitempty"`
}

// Options configure an Env.
type Options struct {
	// Module is the bench workflow module (testdata/workflows/bench built
	// for wasip1). Required.
	Module []byte
	// Dir holds the databases. Empty: a temporary folder removed by Close.
	Dir string
	// Durability is sqlite.DurabilityNormal (default) or DurabilityStrict.
	Durability string
	// DisableInterrupt runs guests without wazero's close-on-context-done
	// checks (host.Config.DisableInterrupt).
	DisableInterrupt bool
	// DisableInstanceReuse closes every instance after its execution
	// (host.Config.DisableInstanceReuse).
	DisableInstanceReuse bool
	// GoMemory gives instances wazero's default linear memory
	// (host.Config.GoMemory).
	GoMemory bool
	// CacheDir is the host's on-disk compilation cache (host.Config.CacheDir).
	// Empty: compiled modules are cached in memory only.
	CacheDir string
	// Postgres, if set, is the URL of a PostgreSQL database the env uses
	// instead of a new SQLite file (the activities workloads; run ids are
	// made unique per env, so the database may hold earlier ones).
	Postgres string
	// WorkerCommand, if set, is the worker process of the
	// remote-activities workload (RunWorker in a process of its own),
	// given --server URL; empty: the worker runs in this process.
	WorkerCommand []string
	// Engine is host.Config.Engine: "wazero" (default) or "wasmtime".
	Engine string
}

// Env is a host on a fresh SQLite file with the bench module deployed.
type Env struct {
	Host   *host.Host
	Store  store.Store
	Module store.Module

	o       Options
	dir     string
	tempDir bool
	db      string // the database file
	ids     atomic.Int64
	idTag   string // makes run ids unique in a shared database

	first  chan time.Time // activation: arrival times of bench.first
	hold   holder
	remote *remoteEnv // remote-activities: the API server and the worker
}

// Open creates the database, the host, registers the bench activities and
// deploys the module.
func Open(ctx context.Context, o Options) (*Env, error) {
	if len(o.Module) == 0 {
		return nil, errors.New("bench: no module (build testdata/workflows/bench for wasip1: make bench-wasm)")
	}
	e, err := openEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	if e.Module, err = e.Host.Deploy(ctx, "bench", o.Module); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// reopen closes the host and the store and opens them again on the same
// database, as a restarted process would, and deploys the module again.
func (e *Env) reopen(ctx context.Context) error {
	err := errors.Join(e.Host.Close(ctx), e.Store.Close())
	e.Host, e.Store = nil, nil
	if err != nil {
		return fmt.Errorf("bench: reopen: %w", err)
	}
	st, err := e.openStore(ctx)
	if err != nil {
		return err
	}
	e.Store = st
	if e.Host, err = e.newHost(ctx); err != nil {
		return err
	}
	if e.Module, err = e.Host.Deploy(ctx, "bench", e.o.Module); err != nil {
		return err
	}
	return nil
}

// newHost creates a host on e.Store with the bench activities.
func (e *Env) newHost(ctx context.Context) (*host.Host, error) {
	h, err := host.New(ctx, host.Config{
		Store:                e.Store,
		CacheDir:             e.o.CacheDir,
		DisableInterrupt:     e.o.DisableInterrupt,
		DisableInstanceReuse: e.o.DisableInstanceReuse,
		GoMemory:             e.o.GoMemory,
		Engine:               e.o.Engine,
		Logger:               slog.New(slog.DiscardHandler),
		GuestOutput:          io.Discard,
		RemoteActivities:     true, // bench.remote: served by a worker (activities.go)
		// A run waiting on a remote call stays up: the workloads Drive
		// their runs, and nothing would drive one that suspended.
		IdleThreshold: time.Minute,
	})
	if err != nil {
		return nil, err
	}
	h.RegisterActivity(actFirst, func(context.Context, []byte) ([]byte, error) {
		t := time.Now()
		select {
		case e.first <- t:
		default:
		}
		return []byte(`"ok"`), nil
	})
	h.RegisterActivity(actHold, e.hold.activity)
	h.RegisterActivity(actEcho, func(_ context.Context, in []byte) ([]byte, error) { return in, nil })
	return h, nil
}

// openEnv opens the store and the host and registers the activities.
func openEnv(ctx context.Context, o Options) (*Env, error) {
	if o.Durability == "" {
		o.Durability = sqlite.DurabilityNormal
	}
	e := &Env{o: o, dir: o.Dir, first: make(chan time.Time, 1)}
	if e.dir == "" {
		d, err := os.MkdirTemp("", "skein-bench-")
		if err != nil {
			return nil, err
		}
		e.dir, e.tempDir = d, true
	}
	e.db = filepath.Join(e.dir, fmt.Sprintf("bench-%s-%d.db", o.Durability, time.Now().UnixNano()))
	if o.Postgres != "" {
		e.idTag = fmt.Sprintf("%x-", time.Now().UnixNano())
	}
	st, err := e.openStore(ctx)
	if err != nil {
		e.removeDir()
		return nil, err
	}
	e.Store = st
	if e.Host, err = e.newHost(ctx); err != nil {
		_ = st.Close() // the host's error is the one to return
		e.removeDir()
		return nil, err
	}
	return e, nil
}

// openStore opens the env's database: Options.Postgres, else the SQLite
// file.
func (e *Env) openStore(ctx context.Context) (store.Store, error) {
	if e.o.Postgres != "" {
		return postgres.Open(ctx, e.o.Postgres, postgres.Options{})
	}
	return sqlite.Open(ctx, e.db, sqlite.Options{Durability: e.o.Durability})
}

// Close releases the host and the store and removes a temporary folder.
func (e *Env) Close() {
	if e.remote != nil {
		e.remote.stop()
	}
	// A benchmark's scratch host and store, measured already.
	if e.Host != nil {
		_ = e.Host.Close(context.Background())
	}
	if e.Store != nil {
		_ = e.Store.Close()
	}
	e.removeDir()
}

func (e *Env) removeDir() {
	if e.tempDir {
		_ = os.RemoveAll(e.dir) // under the temporary folder
	}
}

// DBBytes is the size of the database file and its WAL.
func (e *Env) DBBytes() int64 {
	var n int64
	for _, f := range []string{e.db, e.db + "-wal"} {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

// id returns a new run id.
func (e *Env) id(prefix string) string {
	return fmt.Sprintf("%s-%s%d", prefix, e.idTag, e.ids.Add(1))
}

// start creates a run of workflow with input, leased to the host for
// the drive that follows.
func (e *Env) start(ctx context.Context, prefix, workflow string, input any) (string, error) {
	id := e.id(prefix)
	return id, e.startID(ctx, id, workflow, input)
}

// startID is start with the run id given.
func (e *Env) startID(ctx context.Context, id, workflow string, input any) error {
	in, err := json.Marshal(input)
	if err != nil {
		return err
	}
	_, err = e.Host.Start(ctx, host.StartOptions{Module: e.Module.Hash, Workflow: workflow, Input: in, ID: id, Seed: 1, ClaimForDrive: true})
	return err
}

// drive drives a run and checks that it reached want.
func (e *Env) drive(ctx context.Context, id string, want store.RunStatus, o host.DriveOptions) (store.Run, error) {
	r, err := e.Host.Drive(ctx, id, o)
	if err != nil {
		return r, err
	}
	if r.Status != want {
		return r, fmt.Errorf("bench: run %s is %s, want %s (%s)", id, r.Status, want, r.Error)
	}
	return r, nil
}

// run starts and drives a run to completion.
func (e *Env) run(ctx context.Context, prefix, workflow string, input any) (store.Run, error) {
	id, err := e.start(ctx, prefix, workflow, input)
	if err != nil {
		return store.Run{}, err
	}
	return e.drive(ctx, id, store.RunCompleted, host.DriveOptions{})
}

// holder is the bench.hold activity: it counts its calls and blocks until
// the current batch is released.
type holder struct {
	mu      sync.Mutex
	arrived chan struct{} // one send per call
	release chan struct{} // closed to release the batch
}

// batch prepares a batch of n calls and returns the channel on which each
// call arrives and the function that releases them all.
func (h *holder) batch(n int) (arrived <-chan struct{}, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.arrived = make(chan struct{}, n)
	h.release = make(chan struct{})
	rel := h.release
	return h.arrived, func() { close(rel) }
}

func (h *holder) activity(ctx context.Context, _ []byte) ([]byte, error) {
	h.mu.Lock()
	arrived, release := h.arrived, h.release
	h.mu.Unlock()
	if release == nil {
		return nil, errors.New("bench.hold called outside a batch")
	}
	select {
	case arrived <- struct{}{}:
	default:
	}
	select {
	case <-release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []byte(`"released"`), nil
}
