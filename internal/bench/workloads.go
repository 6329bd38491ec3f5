package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Sequential runs one run of n no-op steps (Start to completion) and
// returns its wall time.
func (e *Env) Sequential(ctx context.Context, n int) (time.Duration, error) {
	t0 := time.Now()
	r, err := e.run(ctx, "seq", wfSteps, stepsIn{N: n})
	if err != nil {
		return 0, err
	}
	if want := n * (n + 1) / 2; string(r.Result) != fmt.Sprint(want) {
		return 0, fmt.Errorf("bench: sequential run returned %s, want %d", r.Result, want)
	}
	return time.Since(t0), nil
}

// Concurrent starts runs runs of steps no-op steps each, all at once, and
// drives them with workers runs active at a time (0: all of them). It
// returns the wall time from the first Start to the last completion.
func (e *Env) Concurrent(ctx context.Context, runs, steps, workers int) (time.Duration, error) {
	if workers <= 0 || workers > runs {
		workers = runs
	}
	t0 := time.Now()
	ids := make([]string, runs)
	if err := parallel(ctx, runs, workers, func(i int) error {
		id, err := e.start(ctx, "conc", wfSteps, stepsIn{N: steps})
		ids[i] = id
		return err
	}); err != nil {
		return 0, err
	}
	if err := parallel(ctx, runs, workers, func(i int) error {
		_, err := e.drive(ctx, ids[i], store.RunCompleted, host.DriveOptions{})
		return err
	}); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// parallel calls fn(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errc <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return ctx.Err()
	}
}

// FanOut runs one run that spawns tasks tasks with skein.Go, each running
// one no-op step, and joins them; it returns the run's wall time (Start to
// completion).
func (e *Env) FanOut(ctx context.Context, tasks int) (time.Duration, error) {
	t0 := time.Now()
	r, err := e.run(ctx, "fan", wfFanout, stepsIn{N: tasks})
	if err != nil {
		return 0, err
	}
	if want := tasks * (tasks - 1) / 2; string(r.Result) != fmt.Sprint(want) {
		return 0, fmt.Errorf("bench: fan-out run returned %s, want %d", r.Result, want)
	}
	return time.Since(t0), nil
}

// historySleep is the timer that ends a stored history: far enough away
// that the run stays suspended for the whole benchmark.
const historySleep = 24 * time.Hour

// StoreHistory runs a run of n no-op steps followed by a long durable
// timer, so the run suspends with n step outcomes (and the pending timer)
// stored. It returns the run id.
func (e *Env) StoreHistory(ctx context.Context, n int) (string, error) {
	id, err := e.start(ctx, "hist", wfSteps, stepsIn{N: n, SleepMS: int(historySleep / time.Millisecond)})
	if err != nil {
		return "", err
	}
	if _, err := e.drive(ctx, id, store.RunSuspended, host.DriveOptions{}); err != nil {
		return "", err
	}
	return id, nil
}

// CompletedHistory runs a run of n no-op steps to completion and returns
// its id.
func (e *Env) CompletedHistory(ctx context.Context, n int) (string, error) {
	r, err := e.run(ctx, "done", wfSteps, stepsIn{N: n})
	return r.ID, err
}

// Replay resumes the suspended run id (from StoreHistory): the host loads
// its journal, replays it from the top in a new instance, reaches the
// pending timer and suspends the run again. It returns the wall time of
// the Drive call.
func (e *Env) Replay(ctx context.Context, id string) (time.Duration, error) {
	t0 := time.Now()
	if _, err := e.drive(ctx, id, store.RunSuspended, host.DriveOptions{}); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// VerifyReplay replays the completed run id (from CompletedHistory) with
// host.Replay, a verifying replay that writes nothing, and returns its
// wall time.
func (e *Env) VerifyReplay(ctx context.Context, id string) (time.Duration, error) {
	t0 := time.Now()
	rr, err := e.Host.Replay(ctx, id)
	if err != nil {
		return 0, err
	}
	if rr.Status != store.RunCompleted {
		return 0, fmt.Errorf("bench: verifying replay of %s reached %s", id, rr.Status)
	}
	return time.Since(t0), nil
}

// Activation is one sample of the activation workload.
type Activation struct {
	// FirstOp: Start to the run's first op reaching the host (the host
	// records it pending, in memory).
	FirstOp time.Duration
	// Total: Start to the call of that op's activity, which waits for the
	// op's pending record to be committed (an activity never acts on what
	// a crash could take back).
	Total time.Duration
	Host  time.Duration // Start to the instantiation (store reads and writes, module lookup)
}

// Activate starts a new run of a workflow whose first op is a host
// activity and measures the time from Start until that op reaches the
// host (an op_recorded event of the run) and until that activity is
// called. The module is compiled and cached by the host already.
func (e *Env) Activate(ctx context.Context) (Activation, error) {
	select { // drop a stale arrival
	case <-e.first:
	default:
	}
	id := e.id("act")
	sub := e.Host.Subscribe(host.SubscribeOptions{RunID: id, Buffer: 64})
	defer sub.Close()
	t0 := time.Now()
	if err := e.startID(ctx, id, wfCall, actFirst); err != nil {
		return Activation{}, err
	}
	var tExec time.Time
	if _, err := e.drive(ctx, id, store.RunCompleted, host.DriveOptions{OnExecution: func() {
		if tExec.IsZero() {
			tExec = time.Now()
		}
	}}); err != nil {
		return Activation{}, err
	}
	var a Activation
	select {
	case t1 := <-e.first:
		a = Activation{Total: t1.Sub(t0), Host: tExec.Sub(t0)}
	default:
		return Activation{}, errors.New("bench: the activation run completed without calling its activity")
	}
	for {
		select {
		case ev := <-sub.C:
			if ev.Kind == host.EventOpRecorded {
				a.FirstOp = ev.Time.Sub(t0)
				return a, nil
			}
		default:
			return Activation{}, errors.New("bench: the activation run recorded no op event")
		}
	}
}

// Compile opens a new host on a new database and deploys the module
// there, with the compilation cache o.CacheDir (empty: none, so the module
// is compiled from scratch). It returns the time Deploy took: compile,
// import checks, the describe run and the store write.
func Compile(ctx context.Context, o Options) (time.Duration, error) {
	mod := o.Module
	o.Module = nil
	e, err := openEnv(ctx, o)
	if err != nil {
		return 0, err
	}
	defer e.Close()
	t0 := time.Now()
	if _, err := e.Host.Deploy(ctx, "bench", mod); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// LiveInstances starts n runs whose first op is an activity that blocks,
// waits until all n instances are live at once (active, not suspended),
// and returns the growth of the process's resident memory divided by n.
// The caller should run it once first to warm the process up.
func (e *Env) LiveInstances(ctx context.Context, n int) (perInstance int64, err error) {
	base, err := settledRSS()
	if err != nil {
		return 0, err
	}
	arrived, release := e.hold.batch(n)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	ids := make([]string, n)
	for i := range ids {
		if ids[i], err = e.start(ctx, "live", wfCall, actHold); err != nil {
			return 0, err
		}
	}
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.drive(ctx, id, store.RunCompleted, host.DriveOptions{})
			errc <- err
		}()
	}
	timeout := time.After(5*time.Minute + time.Duration(n)*100*time.Millisecond)
	for i := 0; i < n; i++ {
		select {
		case <-arrived:
		case err := <-errc:
			if err == nil {
				err = errors.New("a run ended before its activity held it")
			}
			release()
			released = true
			wg.Wait()
			return 0, fmt.Errorf("bench: live instance: %w", err)
		case <-timeout:
			release()
			released = true
			wg.Wait()
			return 0, fmt.Errorf("bench: only %d of %d instances became live", i, n)
		}
	}
	live, err := settledRSS()
	release()
	released = true
	wg.Wait()
	close(errc)
	for e := range errc {
		if e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return 0, err
	}
	return (live - base) / int64(n), nil
}

// SuspendedPoint is the process's resident memory with Runs suspended
// runs in the store.
type SuspendedPoint struct {
	Runs int
	RSS  int64 // after a restart of the host and the store
	// WriterRSS is the RSS of the host that has just written them all,
	// before the restart: SQLite's page caches are full of the new rows
	// (bounded by the store's cache size, not by the count).
	WriterRSS int64
	// DBBytes is the size of the database file (and its WAL).
	DBBytes int64
}

// Suspended creates suspended runs in the store, up to the largest of
// counts, each with the rows a real suspended run has (its run row, three
// step outcomes and a pending timer, copied from a run that suspended for
// real). At each count it restarts the host and the store on the database
// (as a new process would find it), drives one new run to completion, to
// show the host works, and measures the process's resident memory.
func (e *Env) Suspended(ctx context.Context, counts []int) ([]SuspendedPoint, error) {
	tmpl, err := e.StoreHistory(ctx, 3)
	if err != nil {
		return nil, err
	}
	tr, err := e.Store.Run(ctx, tmpl)
	if err != nil {
		return nil, err
	}
	outs, err := e.Store.Outcomes(ctx, tmpl) // the journal's rows, copied as they are
	if err != nil {
		return nil, err
	}
	counts = slices.Clone(counts)
	slices.Sort(counts)
	var points []SuspendedPoint
	made := 0
	for _, c := range counts {
		for made < c {
			k := min(1000, c-made)
			if err := e.createSuspended(ctx, tr, outs, k); err != nil {
				return nil, err
			}
			made += k
		}
		written, err := settledRSS()
		if err != nil {
			return nil, err
		}
		if err := e.reopen(ctx); err != nil {
			return nil, err
		}
		if _, err := e.run(ctx, "check", wfSteps, stepsIn{N: 10}); err != nil {
			return nil, err
		}
		rss, err := settledRSS()
		if err != nil {
			return nil, err
		}
		points = append(points, SuspendedPoint{Runs: c, RSS: rss, WriterRSS: written, DBBytes: e.DBBytes()})
	}
	return points, nil
}

// createSuspended creates k suspended runs like tmpl.
func (e *Env) createSuspended(ctx context.Context, tmpl store.Run, outs []store.Outcome, k int) error {
	now := time.Now()
	runs := make([]store.Run, k)
	if err := parallel(ctx, k, 16, func(i int) error {
		r := tmpl
		r.ID = e.id("susp")
		r.Status = store.RunPending
		r.Result, r.Error, r.WakeAt = nil, "", 0
		r.CreatedAt, r.UpdatedAt = now, now
		got, _, err := e.Store.CreateRun(ctx, r)
		runs[i] = got
		return err
	}); err != nil {
		return err
	}
	var b store.Batch
	for _, r := range runs {
		r.Status, r.WakeAt, r.UpdatedAt = store.RunSuspended, now.Add(historySleep).UnixNano(), now
		b.Runs = append(b.Runs, r)
		for _, o := range outs {
			b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: r.ID, Outcome: o})
		}
	}
	return e.Store.Commit(ctx, b)
}

// settledRSS collects garbage, returns freed memory to the OS and reads
// the resident set size.
func settledRSS() (int64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	return RSS()
}
