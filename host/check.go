package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/sched"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

// CheckOptions configure Check.
type CheckOptions struct {
	// Workflow is the registered workflow to check; default: the module's
	// only workflow.
	Workflow string
	// Input is its JSON input; empty means null.
	Input json.RawMessage
	// Schedules is the number of seeded schedules; default 200.
	Schedules int
	// Seed chooses the schedules; default 1. The same seed checks the same
	// schedules, exactly.
	Seed uint64
	// Schedule, if > 0, checks only that schedule (1-based), to reproduce
	// a failure; CrashAt, if > 0, then replays only from that crash point.
	Schedule int
	CrashAt  int
	// Activities are fakes by name for the activities the workflow calls
	// (an activity without one returns JSON null; the HTTP activity,
	// HTTPActivity, fails without one: a check makes no requests).
	Activities map[string]Activity
	// StepTime and ActivityTime bound the seeded virtual durations (see
	// Simulation); default 100ms each.
	StepTime, ActivityTime time.Duration
	// Parallelism is the number of schedules checked at once; default
	// GOMAXPROCS.
	Parallelism int
	// CacheDir keeps compiled modules on disk across processes.
	CacheDir string
	// DisableInterrupt runs the guest without interrupt checks (faster;
	// for trusted modules, see Config).
	DisableInterrupt bool
	// GuestOutputFor, if set, receives the guest's stdout and stderr per
	// execution, as host.Config.GuestOutputFor (run is the id of the
	// schedule's run, or of a replay from one of its crash points).
	GuestOutputFor func(run string) io.Writer
	// MaxContinues is how many successors of a run that continues as new
	// (skein.ContinueAsNew) each schedule follows and checks; default
	// DefaultCheckContinues.
	MaxContinues int
	// Progress, if set, is called after each schedule with the number
	// checked so far and the total.
	Progress func(done, total int)

	minting      sched.Minting // test only: a broken id policy the check must catch
	replayInline bool          // test only: a replay that hands every recorded value back at once ("instant promise recovery")
	// LimitHint is Config.LimitHint for the runs of the check.
	LimitHint func(field string) string
	// Engine is Config.Engine for the runs of the check.
	Engine string
}

// Check runs a workflow hermetically under o.Schedules seeded schedules
// (see Simulation) against an in-memory store, and for each schedule
// replays the run from every crash point of its journal, requiring the
// same journal and the same end; then it compares the schedules: every
// key must name the same op in all of them. It returns an error only when
// the check could not run (a bad module, an unknown workflow); what it
// found is in the report.
func Check(ctx context.Context, wasm []byte, o CheckOptions) (*CheckReport, error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	start := time.Now()
	h, err := newHost(ctx, Config{Store: memory.New(), Evict: EvictNever, CacheDir: o.CacheDir,
		DisableInterrupt: o.DisableInterrupt, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), GuestOutputFor: o.GuestOutputFor,
		Simulation: &Simulation{Seed: o.Seed, Activities: o.Activities, StepTime: o.StepTime, ActivityTime: o.ActivityTime},
		LimitHint:  o.LimitHint, Engine: o.Engine},
		testHooks{minting: o.minting, replayInline: o.replayInline})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	defer h.Close(ctx)
	m, err := h.Deploy(ctx, "check", wasm)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	if o.Workflow == "" && len(m.Workflows) == 1 {
		o.Workflow = m.Workflows[0]
	}
	if o.Workflow == "" {
		return nil, fmt.Errorf("check: the module registers %d workflows (%s): name one", len(m.Workflows), strings.Join(m.Workflows, ", "))
	}
	if !slices.Contains(m.Workflows, o.Workflow) {
		return nil, fmt.Errorf("check: the module has no workflow %q; it registers: %s", o.Workflow, strings.Join(m.Workflows, ", "))
	}
	ks := make([]int, 0, o.Schedules)
	for k := 1; k <= o.Schedules; k++ {
		ks = append(ks, k)
	}
	if o.Schedule > 0 {
		ks = []int{o.Schedule}
	}
	results := h.checkSchedules(ctx, m, o, ks)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	r, err := checkReport(o, results)
	if err != nil {
		return nil, err
	}
	r.Elapsed = time.Since(start)
	return r, nil
}

// setDefaults fills in the defaults of the options and checks them.
func (o *CheckOptions) setDefaults() error {
	if o.Schedules <= 0 {
		o.Schedules = 200
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.MaxContinues <= 0 {
		o.MaxContinues = DefaultCheckContinues
	}
	if o.Parallelism <= 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if len(o.Input) == 0 {
		o.Input = json.RawMessage("null")
	}
	if !json.Valid(o.Input) {
		return fmt.Errorf("check: input is not valid JSON: %.100q", o.Input)
	}
	if o.CrashAt < 0 || o.Schedule < 0 || (o.CrashAt > 0 && o.Schedule == 0) {
		return errors.New("check: a crash point needs a schedule, and both count from 1")
	}
	return nil
}

// checkSchedules runs the schedules ks on o.Parallelism goroutines and
// returns their results in the order of ks.
func (h *Host) checkSchedules(ctx context.Context, m store.Module, o CheckOptions, ks []int) []scheduleResult {
	results := make([]scheduleResult, len(ks))
	shares := &replayShares{byLog: map[[32]byte]*sharedReplays{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	next := make(chan int)
	for range min(o.Parallelism, len(ks)) {
		wg.Go(func() {
			for i := range next {
				results[i] = h.checkSchedule(ctx, m, o, ks[i], shares)
				if o.Progress != nil {
					mu.Lock()
					done++
					o.Progress(done, len(ks))
					mu.Unlock()
				}
			}
		})
	}
	for i := range ks {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

type scheduleResult struct {
	k           int
	chain       []ChainRun // the run, then each successor it continued as (checkchain.go)
	err         error      // the check itself failed
	ops         map[string]simOp
	choices     map[string][]choice // per key: the recorded choices before its op (simchoice.go)
	end         EndGroup
	replays     int // crash points checked
	shared      int // of them, covered by another schedule's replays (checkshare.go)
	divergences []Divergence
}

// checkSchedule runs schedule k, then replays it from every crash point,
// unless a schedule that recorded the same log does (checkshare.go).
func (h *Host) checkSchedule(ctx context.Context, m store.Module, o CheckOptions, k int, shares *replayShares) scheduleResult {
	res := scheduleResult{k: k}
	seed := mix(o.Seed, fmt.Sprintf("schedule:%d", k))
	id := fmt.Sprintf("s%d", k)
	run := store.Run{ID: id, ModuleHash: m.Hash, Workflow: o.Workflow, Input: o.Input, Seed: o.Seed | 1, StartTime: checkEpoch}
	sim := newSimRun(seed, checkEpoch)
	h.sim.preset(id, sim)
	defer h.sim.drop(id)
	if _, _, err := h.newRun(ctx, run); err != nil {
		res.err = err
		return res
	}
	final, err := h.Drive(ctx, id, DriveOptions{})
	if err != nil && !IsDivergence(err) {
		res.err = err
		return res
	}
	res.ops, res.choices = sim.ops, sim.choices
	res.end = EndGroup{Status: final.Status, Result: string(final.Result), Error: final.Error}
	journal, err := h.journal(ctx, id)
	if err != nil {
		res.err = err
		return res
	}
	res.chain = append(res.chain, chainRun(final, run.Input, len(journal)))
	if err := h.sharedCrashReplays(ctx, o, &res, final, sim, journal, shares); err != nil {
		res.err = err
		return res
	}
	if final.Status == store.RunContinued {
		h.checkChain(ctx, o, &res, final, seed)
	}
	return res
}

// journal returns a run's settled outcomes in settle order.
func (h *Host) journal(ctx context.Context, id string) ([]store.Outcome, error) {
	outs, err := h.cfg.Store.Outcomes(ctx, id)
	if err != nil {
		return nil, err
	}
	j := outs[:0]
	for _, o := range outs {
		if o.Status != store.OutcomePending {
			j = append(j, o)
		}
	}
	return j, nil
}

// verifyReplay replays the whole journal without running anything.
func (h *Host) verifyReplay(ctx context.Context, final store.Run, c int) *Divergence {
	rr, err := h.Replay(ctx, final.ID)
	if err != nil {
		return &Divergence{CrashAt: c, Expected: "the journal to replay exactly", Got: err.Error()}
	}
	want := final.Status
	switch want {
	case store.RunCanceled:
		want = store.RunCompleted
		if len(final.Result) == 0 {
			want = store.RunFailed
		}
	case store.RunDiverged:
		return nil
	}
	if rr.Status != want || string(rr.Result) != string(final.Result) {
		return &Divergence{CrashAt: c, Expected: fmt.Sprintf("%s %s", final.Status, endText(string(final.Result), final.Error)),
			Got: fmt.Sprintf("%s %s", rr.Status, endText(string(rr.Result), rr.Error))}
	}
	return nil
}

// crashReplay copies the run as a crash before its c-th settlement would
// have left it (with its child runs as they ended), drives the copy, and
// compares its journal and end with the run's.
func (h *Host) crashReplay(ctx context.Context, final store.Run, sim *simRun, journal []store.Outcome, c int) (*Divergence, error) {
	cid := fmt.Sprintf("%s-c%d", final.ID, c)
	var prefix []store.RunOutcome
	clock := final.StartTime
	settled := 0
	for _, rec := range sim.log {
		if rec.out.Status != store.OutcomePending {
			settled++
			if settled == c {
				break
			}
			clock = max(clock, rec.out.VTime)
		}
		prefix = append(prefix, store.RunOutcome{RunID: cid, Outcome: rec.out})
	}
	run := final
	run.ID, run.Status, run.Result, run.Error, run.WakeAt = cid, store.RunRunning, nil, "", 0
	if _, _, err := h.cfg.Store.CreateRun(ctx, run); err != nil {
		return nil, err
	}
	if err := h.cfg.Store.Commit(ctx, store.Batch{Outcomes: prefix}); err != nil {
		return nil, err
	}
	if err := h.copyChildren(ctx, final.ID, cid); err != nil {
		return nil, err
	}
	h.sim.preset(cid, sim.clone(clock))
	defer h.sim.drop(cid)
	got, err := h.Drive(ctx, cid, DriveOptions{})
	if err != nil {
		if IsDivergence(err) {
			return &Divergence{CrashAt: c, Expected: "the journal to replay exactly", Got: err.Error()}, nil
		}
		return nil, err
	}
	j, err := h.journal(ctx, cid)
	if err != nil {
		return nil, err
	}
	for i := 0; i < max(len(j), len(journal)); i++ {
		var want, have *store.Outcome
		if i < len(journal) {
			want = &journal[i]
		}
		if i < len(j) {
			have = &j[i]
		}
		if want != nil && have != nil && sameOutcome(*want, *have) {
			continue
		}
		d := &Divergence{CrashAt: c, Expected: describeOutcome(want, i+1), Got: describeOutcome(have, i+1)}
		if want != nil {
			d.Key = want.Key
		} else {
			d.Key = have.Key
		}
		return d, nil
	}
	if got.Status != final.Status || string(got.Result) != string(final.Result) || got.Error != final.Error {
		return &Divergence{CrashAt: c,
			Expected: fmt.Sprintf("the run to end %s %s", final.Status, endText(string(final.Result), final.Error)),
			Got:      fmt.Sprintf("%s %s", got.Status, endText(string(got.Result), got.Error))}, nil
	}
	return nil, nil
}

func sameOutcome(a, b store.Outcome) bool {
	return a.Key == b.Key && a.Kind == b.Kind && a.Function == b.Function && a.Status == b.Status &&
		bytes.Equal(a.Value, b.Value) && a.Error == b.Error
}

func describeOutcome(o *store.Outcome, tick int) string {
	if o == nil {
		return fmt.Sprintf("nothing at tick %d", tick)
	}
	return fmt.Sprintf("tick %d: %s %q at key %q settled %s", tick, o.Kind, o.Function, o.Key, endText(string(o.Value), o.Error))
}

// childPage is the page of runs copyChildren lists at a time after its
// first page of one: most runs have no children, and a list copies every
// run it returns.
const childPage = 32

// copyChildren copies the child runs of run (ids "{run}.…", at any depth)
// with their outcomes as they ended, renamed under to.
func (h *Host) copyChildren(ctx context.Context, from, to string) error {
	st := h.cfg.Store
	after := from + "."
	for page := 1; ; page = childPage {
		rs, err := st.Runs(ctx, store.RunFilter{After: after, Limit: page})
		if err != nil {
			return err
		}
		n := 0
		for _, r := range rs {
			if !strings.HasPrefix(r.ID, from+".") {
				return nil
			}
			n++
			after = r.ID
			outs, err := st.Outcomes(ctx, r.ID)
			if err != nil {
				return err
			}
			c := r
			c.ID = to + strings.TrimPrefix(r.ID, from)
			c.Parent = to + strings.TrimPrefix(r.Parent, from)
			// One batch: the copy of a completed run is created with its
			// journal, which is closed from then on (store.Batch).
			b := store.Batch{Creates: []store.Run{c}, Outcomes: make([]store.RunOutcome, len(outs))}
			for i, o := range outs {
				b.Outcomes[i] = store.RunOutcome{RunID: c.ID, Outcome: o}
			}
			if err := st.Commit(ctx, b); err != nil {
				return err
			}
			h.sim.mu.Lock()
			if s := h.sim.runs[r.ID]; s != nil {
				h.sim.runs[c.ID] = s.clone(s.clock)
			}
			h.sim.mu.Unlock()
		}
		if n < page {
			return nil
		}
	}
}
