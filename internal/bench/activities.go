package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/server"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/worker"
)

// The activities workloads: durable activity calls, the unit a DBOS step
// or a Temporal activity is, whose attempt and result are committed
// before the workflow sees the result. In process, an activity the host
// registered; remote, a task a worker claims over the worker protocol
// (loopback HTTP).

const (
	wfCalls   = "calls"
	actEcho   = "bench.echo"   // registered in process: returns its input
	actRemote = "bench.remote" // served by a worker: returns its input
)

// callsIn is the input of the calls workflow.
type callsIn struct {
	N        int    `json:"n"`
	Activity string `json:"activity"`
}

// remoteEnv is the API server and the worker of the remote workload.
type remoteEnv struct {
	srv    *http.Server
	url    string
	cancel context.CancelFunc
	done   chan error
	cmd    *exec.Cmd
}

// startRemote serves the API on loopback and starts a worker for
// bench.remote: the process o.WorkerCommand names (with --server URL
// appended), or one in this process.
func (e *Env) startRemote(ctx context.Context) error {
	if e.remote != nil {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	r := &remoteEnv{url: "http://" + ln.Addr().String(), done: make(chan error, 1)}
	r.srv = &http.Server{Handler: server.New(e.Host, server.Options{Logger: slog.New(slog.DiscardHandler)})}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("bench: the activities' server stopped", "err", err)
		}
	}()
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	if len(e.o.WorkerCommand) > 0 {
		r.cmd = exec.CommandContext(wctx, e.o.WorkerCommand[0], append(e.o.WorkerCommand[1:], "--server", r.url)...)
		r.cmd.Stderr = os.Stderr
		if err := r.cmd.Start(); err != nil {
			cancel()
			_ = r.srv.Close() // the start's error is the one to return
			return fmt.Errorf("bench: start the worker process: %w", err)
		}
		go func() { r.done <- r.cmd.Wait() }()
	} else {
		go func() { r.done <- RunWorker(wctx, r.url) }()
	}
	e.remote = r
	return nil
}

func (r *remoteEnv) stop() {
	r.cancel()
	// The cancel kills a worker process: only the in-process worker's
	// error says something went wrong.
	if err := <-r.done; err != nil && r.cmd == nil {
		slog.Error("bench: the worker stopped", "err", err)
	}
	_ = r.srv.Close() // a benchmark's own server, done with
}

// RunWorker serves bench.remote to the server at url until ctx ends: the
// worker of the remote-activities workload (`skein bench` runs it as a
// process of its own).
func RunWorker(ctx context.Context, url string) error {
	w, err := worker.New(worker.Options{Server: url, Identity: "bench-worker", Concurrency: 256, Pollers: 4,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	w.Register(actRemote, func(_ context.Context, in []byte) ([]byte, error) { return in, nil })
	return w.Run(ctx)
}

// Activities runs runs runs of calls activity calls each (remote: served
// by the worker), workers runs active at a time, and returns the wall
// time from the first Start to the last completion.
func (e *Env) Activities(ctx context.Context, remote bool, runs, calls, workers int) (time.Duration, error) {
	act := actEcho
	if remote {
		act = actRemote
		if err := e.startRemote(ctx); err != nil {
			return 0, err
		}
	}
	if workers <= 0 || workers > runs {
		workers = runs
	}
	want := fmt.Sprint(calls * (calls - 1) / 2)
	t0 := time.Now()
	ids := make([]string, runs)
	if err := parallel(ctx, runs, workers, func(i int) error {
		id, err := e.start(ctx, "act", wfCalls, callsIn{N: calls, Activity: act})
		ids[i] = id
		return err
	}); err != nil {
		return 0, err
	}
	if err := parallel(ctx, runs, workers, func(i int) error {
		r, err := e.drive(ctx, ids[i], store.RunCompleted, host.DriveOptions{})
		if err == nil && string(r.Result) != want {
			err = fmt.Errorf("bench: run %s returned %s, want %s", r.ID, r.Result, want)
		}
		return err
	}); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// activityFigures measures the sequential and the concurrent case of an
// activities workload.
func activityFigures(ctx context.Context, e *Env, remote bool, s Sizes, repeat func(string, func() (time.Duration, error)) (time.Duration, error), add func(string, float64)) error {
	kind := "in-process"
	if remote {
		kind = "remote"
	}
	d, err := repeat(fmt.Sprintf("one run of %d %s calls", s.Calls, kind), func() (time.Duration, error) {
		return e.Activities(ctx, remote, 1, s.Calls, 1)
	})
	if err != nil {
		return err
	}
	add("seq_calls_per_s", float64(s.Calls)/d.Seconds())
	d, err = repeat(fmt.Sprintf("%d runs x %d %s calls", s.CallRuns, s.RunCalls, kind), func() (time.Duration, error) {
		return e.Activities(ctx, remote, s.CallRuns, s.RunCalls, s.Workers)
	})
	if err != nil {
		return err
	}
	add("conc_calls_per_s", float64(s.CallRuns*s.RunCalls)/d.Seconds())
	return nil
}
