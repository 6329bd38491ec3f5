package check

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/internal/checklink"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

// checker is one check of a module at work: the host it runs on, its
// link to that host's internals and its memory store, the module and
// options, the budget of crash replays and
// the replays schedules share. Its memory does not grow with the number
// of schedules: each crash copy is deleted once compared, each schedule's
// runs once the schedule is done, and the results are folded into the
// report in schedule order as they come (reportFolder).
type checker struct {
	h      *host.Host
	link   *checklink.Link
	mem    *memory.Store
	m      store.Module
	o      Options
	budget *crashBudget
	shares *replayShares
}

type scheduleResult struct {
	k           int
	chain       []ChainRun // the run, then each successor it continued as (chain.go)
	err         error      // the check itself failed
	ops         map[string]exec.SimOp
	choices     map[string][]exec.SelectChoice // per key: the recorded choices before its op (host/internal/exec/simchoice.go)
	promised    map[string]string              // how each promise was settled (host/internal/exec/checkpromise.go)
	end         EndGroup
	crashPoints int // of the schedule's runs' journals, all of them
	replays     int // crash points checked
	shared      int // of them, covered by another schedule's replays (share.go)
	divergences []Divergence
}

// run checks the schedules ks on o.Parallelism goroutines and folds each
// result into the report, in the order of ks.
func (c *checker) run(ctx context.Context, ks []int) (*Report, error) {
	fold := newReportFolder(c.o, ks)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(c.o.Parallelism, len(ks)) {
		wg.Go(func() {
			for i := range next {
				res := c.checkSchedule(ctx, ks[i])
				c.budget.done()
				fold.add(i, res)
			}
		})
	}
	for i := range ks {
		next <- i
	}
	close(next)
	wg.Wait()
	return fold.report()
}

// checkSchedule runs schedule k, then replays it from its crash points
// (all of them, or as many as the budget allows), unless a schedule that
// recorded the same log does (share.go); then follows the chain of a
// run that continued as new, and forgets every run it made.
func (c *checker) checkSchedule(ctx context.Context, k int) scheduleResult {
	o := c.o
	res := scheduleResult{k: k}
	seed := exec.Mix(o.Seed, fmt.Sprintf("schedule:%d", k))
	id := fmt.Sprintf("s%d", k)
	defer c.forget(id)
	run := store.Run{ID: id, ModuleHash: c.m.Hash, Workflow: o.Workflow, Input: o.Input, Seed: o.Seed | 1, StartTime: checkEpoch}
	sim := exec.NewSimRun(seed, checkEpoch)
	sim.Index = k
	c.link.Sim.Preset(id, sim)
	defer c.link.Sim.Drop(id)
	if _, _, err := c.link.NewRun(ctx, run); err != nil {
		res.err = err
		return res
	}
	start := time.Now()
	final, err := c.h.Drive(ctx, id, host.DriveOptions{})
	if err != nil && !host.IsDivergence(err) {
		res.err = err
		return res
	}
	cost := time.Since(start)
	res.ops, res.choices, res.promised = sim.Ops, sim.Choices, sim.Promised
	res.end = EndGroup{Status: final.Status, Result: string(final.Result), Error: final.Error}
	journal, err := c.journal(ctx, id)
	if err != nil {
		res.err = err
		return res
	}
	res.chain = append(res.chain, chainRun(final, run.Input, len(journal)))
	if err := c.sharedCrashReplays(ctx, &res, final, sim, journal, cost); err != nil {
		res.err = err
		return res
	}
	if final.Status == store.RunContinued {
		c.checkChain(ctx, &res, final, seed)
	}
	return res
}

// forget deletes the run id and every run derived from it: its child
// runs ({id}.…), its successors ({id}~N) and its crash copies ({id}-cN).
func (c *checker) forget(id string) {
	c.mem.DeleteRuns(func(r string) bool {
		rest, ok := strings.CutPrefix(r, id)
		return ok && (rest == "" || strings.IndexByte(".~-", rest[0]) >= 0)
	})
}

// crashReplay copies the run as a crash before its c-th settlement would
// have left it (with its child runs as they ended), drives the copy, and
// compares its journal and end with the run's; then it forgets the copy.
func (c *checker) crashReplay(ctx context.Context, final store.Run, sim *exec.SimRun, journal []store.Outcome, at int) (*Divergence, error) {
	cid := fmt.Sprintf("%s-c%d", final.ID, at)
	defer c.forget(cid)
	var prefix []store.RunOutcome
	clock := final.StartTime
	settled := 0
	for _, rec := range sim.Log {
		if rec.Out.Status != store.OutcomePending {
			settled++
			if settled == at {
				break
			}
			clock = max(clock, rec.Out.VTime)
		}
		prefix = append(prefix, store.RunOutcome{RunID: cid, Outcome: rec.Out})
	}
	run := final
	run.ID, run.Status, run.Result, run.Error, run.WakeAt = cid, store.RunRunning, nil, "", 0
	if _, _, err := c.mem.CreateRun(ctx, run); err != nil {
		return nil, err
	}
	if err := c.mem.Commit(ctx, store.Batch{Outcomes: prefix}); err != nil {
		return nil, err
	}
	if err := c.copyChildren(ctx, final.ID, cid); err != nil {
		return nil, err
	}
	c.link.Sim.Preset(cid, sim.Clone(clock))
	defer c.link.Sim.Drop(cid)
	got, err := c.h.Drive(ctx, cid, host.DriveOptions{})
	if err != nil {
		if host.IsDivergence(err) {
			return &Divergence{CrashAt: at, Expected: "the journal to replay exactly", Got: err.Error()}, nil
		}
		return nil, err
	}
	j, err := c.journal(ctx, cid)
	if err != nil {
		return nil, err
	}
	if d := compareJournals(journal, j, at); d != nil {
		return d, nil
	}
	if got.Status != final.Status || string(got.Result) != string(final.Result) || got.Error != final.Error {
		return &Divergence{CrashAt: at,
			Expected: fmt.Sprintf("the run to end %s %s", final.Status, endText(string(final.Result), final.Error)),
			Got:      fmt.Sprintf("%s %s", got.Status, endText(string(got.Result), got.Error))}, nil
	}
	return nil, nil
}

// compareJournals returns the first record where the journal j of the
// replay from crash point at departs from the schedule's journal, or nil.
func compareJournals(journal, j []store.Outcome, at int) *Divergence {
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
		d := &Divergence{CrashAt: at, Expected: describeOutcome(want, i+1), Got: describeOutcome(have, i+1)}
		if want != nil {
			d.Key = want.Key
		} else {
			d.Key = have.Key
		}
		return d
	}
	return nil
}

// replayCrashes replays the run final from its crash points (every one,
// as many as the budget allows, or only o.CrashAt of the chain's run
// o.ChainRun), the last being the verifying replay of the whole journal,
// and adds what departed to res. cost is what the run itself took, the
// estimate of one replay.
func (c *checker) replayCrashes(ctx context.Context, res *scheduleResult, final store.Run, sim *exec.SimRun, journal []store.Outcome, cost time.Duration) error {
	total := len(journal) + 1
	res.crashPoints += total
	var points []int
	switch {
	case c.o.CrashAt > 0 && c.o.chainRun() == len(res.chain):
		if c.o.CrashAt <= total {
			points = []int{c.o.CrashAt}
		}
	case c.o.CrashAt > 0: // another run of the chain is reproduced
	default:
		points = crashPoints(total, c.budget.allow(total, cost), sim.Frac("crash-points"))
	}
	for _, at := range points {
		res.replays++
		var d *Divergence
		if at == total {
			// After the last tick: the whole journal, replayed without
			// running anything.
			d = c.verifyReplay(ctx, final, at)
		} else {
			var err error
			if d, err = c.crashReplay(ctx, final, sim, journal, at); err != nil {
				return err
			}
		}
		if d != nil {
			d.Schedule = res.k
			if len(res.chain) > 1 {
				d.Run, d.ChainRun = final.ID, len(res.chain)
			}
			res.divergences = append(res.divergences, *d)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// childPage is the page of runs copyChildren lists at a time after its
// first page of one: most runs have no children, and a list copies every
// run it returns.
const childPage = 32

// copyChildren copies the child runs of run (ids "{run}.…", at any depth)
// with their outcomes as they ended, renamed under to.
func (c *checker) copyChildren(ctx context.Context, from, to string) error {
	st, sim := c.mem, c.link.Sim
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
			cp := r
			cp.ID = to + strings.TrimPrefix(r.ID, from)
			cp.Parent = to + strings.TrimPrefix(r.Parent, from)
			// One batch: the copy of a completed run is created with its
			// journal, which is closed from then on (store.Batch).
			b := store.Batch{Creates: []store.Run{cp}, Outcomes: make([]store.RunOutcome, len(outs))}
			for i, o := range outs {
				b.Outcomes[i] = store.RunOutcome{RunID: cp.ID, Outcome: o}
			}
			if err := st.Commit(ctx, b); err != nil {
				return err
			}
			sim.Mu.Lock()
			if s := sim.Runs[r.ID]; s != nil {
				sim.Runs[cp.ID] = s.Clone(s.Clock)
			}
			sim.Mu.Unlock()
		}
		if n < page {
			return nil
		}
	}
}
