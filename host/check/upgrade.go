package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/internal/checklink"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/modules"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

// UpgradeOptions configure Upgrade.
type UpgradeOptions struct {
	// Store holds the live runs to check. Upgrade only reads it.
	Store store.Store
	// Workflow limits the check to the runs of one workflow, which the
	// new module must register; default: the runs of every workflow the
	// new module registers.
	Workflow string
	// Statuses are the run statuses checked; default suspended and
	// running (a running run is one a worker drives, or drove when it
	// stopped). Only pending, running and suspended are allowed.
	Statuses []store.RunStatus
	// Parallelism is the number of runs replayed at once; default
	// GOMAXPROCS.
	Parallelism int
	// CacheDir keeps compiled modules on disk across processes.
	CacheDir string
	// DisableInterrupt runs the guest without interrupt checks (faster;
	// for trusted modules, see host.Config).
	DisableInterrupt bool
	// GuestOutputFor, if set, receives the guest's stdout and stderr per
	// replayed run, as host.Config.GuestOutputFor.
	GuestOutputFor func(run string) io.Writer
	// Progress, if set, is called after each run with the number checked
	// so far.
	Progress func(done int)
	// LimitHint is host.Config.LimitHint for the replays.
	LimitHint func(field string) string
	// Engine is host.Config.Engine for the replays.
	Engine string
}

// Upgrade replays every live run in o.Store, each from its stored
// journal, against the module wasm instead of the module it ran, and
// reports per run what `skein resume` with that module would meet: a
// clean replay, or the first divergence. Nothing runs for real: recorded
// outcomes feed the replay; an op the journal does not record starts
// nothing (a new step body runs in the sandbox, as on a resume, but an
// activity, timer, promise or child op just waits). A run whose replay
// consumes its journal and would go on with new work replays cleanly. It
// returns an error only when the check could not run (a bad module, an
// unknown workflow, a store that fails); what it found is in the report.
func Upgrade(ctx context.Context, wasm []byte, o UpgradeOptions) (*UpgradeReport, error) {
	start := time.Now()
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	link := &checklink.Link{}
	h, err := host.New(checklink.With(ctx, link), host.Config{Store: memory.New(), Evict: host.EvictNever, CacheDir: o.CacheDir,
		DisableInterrupt: o.DisableInterrupt, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		GuestOutputFor: o.GuestOutputFor, LimitHint: o.LimitHint, Engine: o.Engine})
	if err != nil {
		return nil, fmt.Errorf("upgrade check: %w", err)
	}
	defer func() { _ = h.Close(ctx) }() // the check's own in-memory host: nothing of it outlives the check
	m, err := h.Deploy(ctx, "upgrade", wasm)
	if err != nil {
		return nil, fmt.Errorf("upgrade check: %w", err)
	}
	workflows := m.Workflows
	if o.Workflow != "" {
		if !slices.Contains(m.Workflows, o.Workflow) {
			return nil, fmt.Errorf("upgrade check: the new module has no workflow %q (its live runs could not go on); it registers: %s",
				o.Workflow, strings.Join(m.Workflows, ", "))
		}
		workflows = []string{o.Workflow}
	}
	cm, err := link.Compiled(ctx, m.Hash)
	if err != nil {
		return nil, fmt.Errorf("upgrade check: %w", err)
	}
	defer link.Release(cm)
	u := &upgradeCheck{link: link, cm: cm, module: m.Hash, o: o}
	runs, err := u.checkAll(ctx, workflows)
	if err != nil {
		return nil, fmt.Errorf("upgrade check: %w", err)
	}
	slices.SortFunc(runs, func(a, b UpgradeRun) int { return strings.Compare(a.ID, b.ID) })
	r := &UpgradeReport{Module: m.Hash, Workflows: workflows, Statuses: o.Statuses, Runs: runs, Elapsed: time.Since(start)}
	for _, run := range runs {
		if !run.OK() {
			r.Broken++
		}
	}
	return r, nil
}

// setDefaults fills in the defaults of the options and checks them.
func (o *UpgradeOptions) setDefaults() error {
	if o.Store == nil {
		return errors.New("upgrade check: UpgradeOptions.Store is required")
	}
	if len(o.Statuses) == 0 {
		o.Statuses = []store.RunStatus{store.RunSuspended, store.RunRunning}
	}
	for _, s := range o.Statuses {
		if s != store.RunPending && s != store.RunRunning && s != store.RunSuspended {
			return fmt.Errorf("upgrade check: run status %q: want pending, running or suspended (the statuses of live runs)", s)
		}
	}
	if o.Parallelism <= 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	return nil
}

// upgradeCheck is one Upgrade: the link to the host it replays on and
// the new module, compiled once for every run.
type upgradeCheck struct {
	link   *checklink.Link
	cm     *modules.Module
	module string
	o      UpgradeOptions
}

// checkAll lists the live runs of the workflows page by page and replays
// them on o.Parallelism workers as they come; each worker reads the
// journal of the run it replays. It returns the results in no order.
func (u *upgradeCheck) checkAll(ctx context.Context, workflows []string) ([]UpgradeRun, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan store.Run, 4*u.o.Parallelism)
	var mu sync.Mutex
	var results []UpgradeRun
	var wg sync.WaitGroup
	for range u.o.Parallelism {
		wg.Go(func() {
			for run := range next {
				res, err := u.checkRun(ctx, run)
				if err != nil {
					cancel(err)
					continue
				}
				mu.Lock()
				results = append(results, res)
				n := len(results)
				mu.Unlock()
				if u.o.Progress != nil {
					u.o.Progress(n)
				}
			}
		})
	}
	err := u.list(ctx, workflows, next)
	close(next)
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return nil, cause
	}
	if err == nil {
		err = ctx.Err()
	}
	return results, err
}

// list sends the runs of the checked statuses and workflows to next.
func (u *upgradeCheck) list(ctx context.Context, workflows []string, next chan<- store.Run) error {
	const page = 1000
	for _, status := range u.o.Statuses {
		after := ""
		for {
			rs, err := u.o.Store.Runs(ctx, store.RunFilter{Status: status, Limit: page, After: after})
			if err != nil {
				return fmt.Errorf("list %s runs: %w", status, err)
			}
			for _, r := range rs {
				if !slices.Contains(workflows, r.Workflow) {
					continue
				}
				select {
				case next <- r:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if len(rs) < page {
				break
			}
			after = rs[len(rs)-1].ID
		}
	}
	return nil
}

// checkRun reads a run's journal and replays it against the new module.
func (u *upgradeCheck) checkRun(ctx context.Context, run store.Run) (UpgradeRun, error) {
	outs, err := u.o.Store.Outcomes(ctx, run.ID)
	if err != nil {
		return UpgradeRun{}, fmt.Errorf("run %s: read its journal: %w", run.ID, err)
	}
	res := UpgradeRun{ID: run.ID, Workflow: run.Workflow, Status: run.Status, Ops: len(outs)}
	run.ModuleHash = u.module
	if err := u.replay(ctx, run, outs, &res); err != nil {
		return UpgradeRun{}, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return res, nil
}

// replay replays run (its ModuleHash already the new module's) from its
// journal outs in one execution of the new module, as a resume would,
// and fills in res with what it met. It returns an error only when the
// replay was interrupted (ctx).
func (u *upgradeCheck) replay(ctx context.Context, run store.Run, outs []store.Outcome, res *UpgradeRun) error {
	w := &exec.UpgradeWorld{Recorded: make(map[string]bool, len(outs)), Clock: run.StartTime}
	recs := make([]sched.Record, len(outs))
	for i, o := range outs {
		recs[i] = exec.FromStore(o)
		w.Recorded[o.Key] = true
		w.Clock = max(w.Clock, o.VTime)
	}
	x := u.link.Upgrade(ctx, u.cm, run, recs, w)
	if err := ctx.Err(); err != nil {
		return err
	}
	switch x.State {
	case exec.Suspended:
		res.End = "continues"
	case exec.Done:
		res.End = "completes"
		if o, skipped := skippedWork(outs, x.S); skipped && w.First != nil {
			res.Break, res.Key, res.Recorded, res.New = BreakSkipped, o.Key, o.Function, w.First.Fn
			res.Error = fmt.Sprintf("the journal records %s %q at key %q, which the new code never reaches: it issues %s %q at key %q, a key the journal does not record, and ends without it (positional keys shifted; the recorded work would be done again under new keys)",
				o.Kind, o.Function, o.Key, w.First.Kind, w.First.Fn, w.First.Key)
			res.End = ""
		}
	case exec.Diverged:
		classifyDivergence(x.Failure, outs, res)
	default:
		res.Break, res.Error = BreakFailure, fmt.Sprint(x.Failure)
	}
	return nil
}
