package check

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
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/internal/checklink"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

// Options configure Module.
type Options struct {
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
	// activity.HTTPActivity, fails without one: a check makes no requests).
	Activities map[string]activity.Func
	// StepTime and ActivityTime bound the seeded virtual durations (see
	// host.Simulation); default 100ms each.
	StepTime, ActivityTime time.Duration
	// Parallelism is the number of schedules checked at once; default
	// GOMAXPROCS.
	Parallelism int
	// CacheDir keeps compiled modules on disk across processes.
	CacheDir string
	// DisableInterrupt runs the guest without interrupt checks (faster;
	// for trusted modules, see host.Config).
	DisableInterrupt bool
	// GuestOutputFor, if set, receives the guest's stdout and stderr per
	// execution, as host.Config.GuestOutputFor (run is the id of the
	// schedule's run, or of a replay from one of its crash points).
	GuestOutputFor func(run string) io.Writer
	// MaxContinues is how many successors of a run that continues as new
	// (skein.ContinueAsNew) each schedule follows and checks; default
	// DefaultContinues.
	MaxContinues int
	// Progress, if set, is called after each schedule with the number
	// checked so far and the total.
	Progress func(done, total int)
	// Budget bounds the check's time: when replaying every crash point of
	// every schedule would take longer, the crash points replayed are
	// sampled to fit (budget.go), and the report says how many were
	// (Report.CrashPoints). Zero replays every one.
	Budget time.Duration
	// ChainRun, with Schedule and CrashAt, names the run of the
	// schedule's continue-as-new chain the crash point is in: 1 (or 0)
	// for the schedule's first run, N for its successor {run}~N.
	ChainRun int
	// Promises settle the external promises at these keys (the part of
	// the full id after "{run}.") with a fixed outcome in every schedule.
	// The check settles the others itself, by schedule: with a value
	// generated from the schema the promise recorded, with an error, or
	// not at all (host/internal/exec/checkpromise.go), unless
	// LeavePromises is set: then they
	// stay pending, and a schedule whose run waits on one ends suspended.
	Promises      map[string]host.PromiseValue
	LeavePromises bool

	minting      sched.Minting       // test only: a broken id policy the check must catch
	replayInline bool                // test only: a replay that hands every recorded value back at once ("instant promise recovery")
	checked      func(*memory.Store) // test only: given the check's store once every schedule is done
	// LimitHint is host.Config.LimitHint for the runs of the check.
	LimitHint func(field string) string
	// Engine is host.Config.Engine for the runs of the check.
	Engine string
}

// Module checks a workflow of the module wasm: it runs the workflow
// hermetically under o.Schedules seeded schedules (see host.Simulation)
// against an in-memory store, and for each schedule replays the run from
// every crash point of its journal, requiring the same journal and the
// same end; then it compares the schedules: every key must name the same
// op in all of them. It returns an error only when the check could not
// run (a bad module, an unknown workflow); what it found is in the
// report.
func Module(ctx context.Context, wasm []byte, o Options) (*Report, error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	start := time.Now()
	mem := memory.New()
	link := &checklink.Link{Minting: o.minting, ReplayInline: o.replayInline}
	// No journal cache: the memory store holds the journals already, and
	// the checker reads and writes it directly.
	h, err := host.New(checklink.With(ctx, link), host.Config{Store: mem, Evict: host.EvictNever, CacheDir: o.CacheDir, JournalCacheBytes: -1,
		DisableInterrupt: o.DisableInterrupt, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), GuestOutputFor: o.GuestOutputFor,
		Simulation: &host.Simulation{Seed: o.Seed, Activities: o.Activities, StepTime: o.StepTime, ActivityTime: o.ActivityTime,
			Promises: o.Promises, SettlePromises: !o.LeavePromises},
		LimitHint: o.LimitHint, Engine: o.Engine})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	defer func() { _ = h.Close(ctx) }() // the check's own in-memory host: nothing of it outlives the check
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
	c := &checker{h: h, link: link, mem: mem, m: m, o: o, budget: newCrashBudget(start, o, len(ks)),
		shares: &replayShares{byLog: map[[32]byte]*sharedReplays{}}}
	r, err := c.run(ctx, ks)
	if o.checked != nil {
		o.checked(mem)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	if err != nil {
		return nil, err
	}
	r.Elapsed = time.Since(start)
	return r, nil
}

// setDefaults fills in the defaults of the options and checks them.
func (o *Options) setDefaults() error {
	if o.Schedules <= 0 {
		o.Schedules = 200
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.MaxContinues <= 0 {
		o.MaxContinues = DefaultContinues
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
	if o.ChainRun < 0 || (o.ChainRun > 0 && o.CrashAt == 0) || o.Budget < 0 {
		return errors.New("check: a run of the chain needs a crash point and counts from 1, and the budget must not be negative")
	}
	for key, v := range o.Promises {
		if v.Error == "" && !json.Valid(v.Value) {
			return fmt.Errorf("check: the value given for promise %q is not valid JSON: %.100q", key, v.Value)
		}
	}
	return nil
}

// journal returns a run's settled outcomes in settle order.
func (c *checker) journal(ctx context.Context, id string) ([]store.Outcome, error) {
	outs, err := c.mem.Outcomes(ctx, id)
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
func (c *checker) verifyReplay(ctx context.Context, final store.Run, at int) *Divergence {
	rr, err := c.h.Replay(ctx, final.ID)
	if err != nil {
		return &Divergence{CrashAt: at, Expected: "the journal to replay exactly", Got: err.Error()}
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
		return &Divergence{CrashAt: at, Expected: fmt.Sprintf("%s %s", final.Status, endText(string(final.Result), final.Error)),
			Got: fmt.Sprintf("%s %s", rr.Status, endText(string(rr.Result), rr.Error))}
	}
	return nil
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

// chainRun is the position in the chain that ChainRun names (1: the
// schedule's first run).
func (o *Options) chainRun() int { return max(o.ChainRun, 1) }
