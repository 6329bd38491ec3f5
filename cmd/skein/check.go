package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/check"
	"github.com/skeinrun/skein/internal/limitflags"
)

// fakes collects --activity NAME=JSON and NAME=error:TEXT flags.
type fakes map[string]activity.Func

func (f fakes) String() string { return "" }

func (f fakes) Set(s string) error {
	name, v, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=JSON or NAME=error:TEXT, got %q", s)
	}
	if text, isErr := strings.CutPrefix(v, "error:"); isErr {
		f[name] = func(context.Context, []byte) ([]byte, error) { return nil, errors.New(text) }
		return nil
	}
	if !json.Valid([]byte(v)) {
		return fmt.Errorf("the value of %s is not valid JSON: %.100q", name, v)
	}
	f[name] = func(context.Context, []byte) ([]byte, error) { return []byte(v), nil }
	return nil
}

// promiseFlags collects --promise KEY=JSON and KEY=error:TEXT flags.
type promiseFlags map[string]host.PromiseValue

func (f promiseFlags) String() string { return "" }

func (f promiseFlags) Set(s string) error {
	key, v, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("want KEY=JSON or KEY=error:TEXT (KEY is the promise's id after \"{run}.\"), got %q", s)
	}
	if text, isErr := strings.CutPrefix(v, "error:"); isErr {
		if text == "" {
			return fmt.Errorf("the error of promise %s is empty", key)
		}
		f[key] = host.PromiseValue{Error: text}
		return nil
	}
	if !json.Valid([]byte(v)) {
		return fmt.Errorf("the value of promise %s is not valid JSON: %.100q", key, v)
	}
	f[key] = host.PromiseValue{Value: json.RawMessage(v)}
	return nil
}

// checkJSON is the --json output of skein check.
type checkJSON struct {
	Workflow  string `json:"workflow"`
	Seed      uint64 `json:"seed"`
	Schedules int    `json:"schedules"`
	Replays   int    `json:"replays"`
	Shared    int    `json:"shared"`
	// CrashPoints counts every crash point; Sampled says the budget
	// (BudgetMS) left some unreplayed.
	CrashPoints int                `json:"crash_points"`
	Sampled     bool               `json:"sampled"`
	BudgetMS    int64              `json:"budget_ms"`
	Promises    []check.PromiseUse `json:"promises"`
	OK          bool               `json:"ok"`
	Summary     string             `json:"summary"`
	Divergences []check.Divergence `json:"divergences"`
	IDConflicts []check.IDConflict `json:"id_conflicts"`
	// ChoiceDependent: keys whose op differs after a recorded choice.
	ChoiceDependent []check.ChoiceDependence `json:"choice_dependent"`
	Ends            []check.EndGroup         `json:"ends"`
	// Chain is the runs the first schedule ran when its run continued as
	// new (absent otherwise); LongestJournal the longest of their journals.
	Chain          []check.ChainRun `json:"chain,omitempty"`
	LongestJournal int              `json:"longest_journal"`
	ElapsedMS      int64            `json:"elapsed_ms"`
}

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", stderr)
	workflow := fs.String("workflow", "", "workflow to check (default: the module's only workflow)")
	input := fs.String("input", "null", "workflow input as JSON")
	schedules := fs.Int("schedules", 200, "seeded schedules to run")
	seed := fs.Uint64("seed", 1, "seed that chooses the schedules (the same seed checks the same schedules)")
	schedule := fs.Int("schedule", 0, "check only this schedule (from a reproduction line)")
	crashAt := fs.Int("crash-at", 0, "with --schedule: replay only from this crash point")
	chainRun := fs.Int("chain-run", 0, "with --crash-at: the crash point is in this run of the schedule's continue-as-new chain (N for {run}~N; default the first run)")
	budget := fs.Duration("budget", 30*time.Second, "time the check may take: when replaying every crash point would take longer, crash points are sampled to fit and the report says how many were replayed; 0 replays every one")
	proms := promiseFlags{}
	fs.Var(proms, "promise", "settle the promise KEY (its id after \"{run}.\") with JSON, or with error:TEXT (repeatable); others are settled by schedule with a value generated from their schema, an error, or not at all")
	leaveProms := fs.Bool("leave-promises", false, "settle no promise that --promise does not name: a run that waits on one ends suspended")
	stepTime := fs.Duration("step-time", 100*time.Millisecond, "longest virtual time a step body takes")
	activityTime := fs.Duration("activity-time", 100*time.Millisecond, "longest virtual time an activity attempt takes")
	noInterrupt := fs.Bool("no-interrupt", false, "run the guest without interrupt checks (faster; trusted modules only)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("quiet", false, "no progress line on stderr")
	eng := addEngineFlag(fs)
	guestOut := fs.Bool("guest-output", false, guestOutputUsage)
	acts := fakes{}
	fs.Var(acts, "activity", "fake for an activity: NAME=JSON or NAME=error:TEXT (repeatable; others return null)")
	up := addUpgradeFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := up.onlyWithUpgrade(fs); err != nil {
		return err
	}
	if *up.module != "" {
		return cmdCheckUpgrade(ctx, fs, up, pos, checkOutput{json: *asJSON, quiet: *quiet, guest: *guestOut, noInterrupt: *noInterrupt, engine: *eng}, stdout, stderr)
	}
	if len(pos) != 1 {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("want exactly one MODULE.wasm")}
	}
	if err := checkJSONFlag("--input", *input); err != nil {
		return err
	}
	if *schedules < 1 || *schedule < 0 || *crashAt < 0 || (*crashAt > 0 && *schedule == 0) || *chainRun < 0 || (*chainRun > 0 && *crashAt == 0) {
		return &exitError{code: exitUsage, err: errors.New("--schedules must be at least 1, --schedule, --crash-at and --chain-run count from 1, --crash-at needs --schedule and --chain-run needs --crash-at")}
	}
	if *budget < 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--budget %s: want 0 (no budget) or more", *budget)}
	}
	if err := checkEngine(*eng); err != nil {
		return err
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	cache := userCompileCache()
	o := check.Options{Workflow: *workflow, Input: json.RawMessage(*input), Schedules: *schedules, Seed: *seed,
		Schedule: *schedule, CrashAt: *crashAt, ChainRun: *chainRun, Activities: acts, StepTime: *stepTime, ActivityTime: *activityTime,
		CacheDir: cache, DisableInterrupt: *noInterrupt, LimitHint: limitflags.Flag, Engine: *eng,
		Budget: *budget, Promises: proms, LeavePromises: *leaveProms}
	if *guestOut {
		o.GuestOutputFor = prefixedOutput(stderr)
	}
	if !*quiet && !*asJSON {
		o.Progress = func(done, total int) {
			if done == total || done%10 == 0 {
				fmt.Fprintf(stderr, "\rchecking: %d/%d schedules", done, total)
			}
			if done == total {
				fmt.Fprint(stderr, "\n")
			}
		}
	}
	r, err := check.Module(ctx, wasm, o)
	if err != nil {
		return err
	}
	if err := printCheck(stdout, r, *asJSON); err != nil {
		return err
	}
	if !r.OK() {
		return &exitError{code: exitFailed}
	}
	return nil
}

// printCheck prints the report of a check, as JSON or as text.
func printCheck(stdout io.Writer, r *check.Report, asJSON bool) error {
	if asJSON {
		j := checkJSON{Workflow: r.Workflow, Seed: r.Seed, Schedules: r.Schedules, Replays: r.Replays, Shared: r.Shared, OK: r.OK(),
			CrashPoints: r.CrashPoints, Sampled: r.Sampled(), BudgetMS: r.Budget.Milliseconds(), Promises: r.Promises,
			Summary: r.Summary(), Divergences: r.Divergences, IDConflicts: r.IDConflicts, ChoiceDependent: r.ChoiceDependent, Ends: r.Ends,
			LongestJournal: r.LongestJournal, ElapsedMS: r.Elapsed.Milliseconds()}
		if len(r.Chain) > 1 {
			j.Chain = r.Chain
		}
		return encodeJSON(stdout, j, "  ")
	}
	// The details quote the module's own names and errors.
	var details strings.Builder
	r.Details(&details)
	fmt.Fprintf(stdout, "%s (%s)\n%s", printableLines(r.Summary()), r.Elapsed.Round(time.Millisecond), printableLines(details.String()))
	return nil
}
