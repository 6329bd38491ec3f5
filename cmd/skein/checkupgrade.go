package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/skeinrun/skein/host/check"
	"github.com/skeinrun/skein/internal/limitflags"
	"github.com/skeinrun/skein/store"
)

// upgradeFlags are the flags of `skein check --upgrade`.
type upgradeFlags struct {
	module     *string
	runs       *string
	brokenOnly *bool
	db         *dbFlags
}

func addUpgradeFlags(fs *flag.FlagSet) *upgradeFlags {
	return &upgradeFlags{
		module:     fs.String("upgrade", "", "NEW.wasm: replay every live run of the store (--db or --store) against this module instead (docs/upgrades.md)"),
		runs:       fs.String("runs", "suspended,running", "with --upgrade: the statuses of the runs to check (pending, running, suspended)"),
		brokenOnly: fs.Bool("broken-only", false, "with --upgrade: list only the runs that would break"),
		db:         addDBFlags(fs, false, true),
	}
}

// onlyWithUpgrade fails when a flag of --upgrade is given without it,
// or a flag of the schedules' check with it.
func (up *upgradeFlags) onlyWithUpgrade(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "db", "store", "durability", "runs", "broken-only":
			if *up.module == "" {
				err = &exitError{code: exitUsage, err: fmt.Errorf("--%s goes with --upgrade NEW.wasm (a check of the live runs of a store)", f.Name)}
			}
		case "input", "schedules", "seed", "schedule", "crash-at", "step-time", "activity-time", "activity":
			if *up.module != "" {
				err = &exitError{code: exitUsage, err: fmt.Errorf("--%s is a flag of the check of seeded schedules, not of --upgrade (which replays the stored journals)", f.Name)}
			}
		}
	})
	return err
}

// checkOutput are the flags of skein check that --upgrade shares.
type checkOutput struct {
	json, quiet, guest, noInterrupt bool
	engine                          string
}

// upgradeJSON is the --json output of skein check --upgrade.
type upgradeJSON struct {
	Module    string             `json:"module"`
	Workflows []string           `json:"workflows"`
	Statuses  []store.RunStatus  `json:"statuses"`
	OK        bool               `json:"ok"`
	Summary   string             `json:"summary"`
	Checked   int                `json:"checked"`
	Broken    int                `json:"broken"`
	Runs      []check.UpgradeRun `json:"runs"`
	ElapsedMS int64              `json:"elapsed_ms"`
}

// cmdCheckUpgrade is skein check --upgrade NEW.wasm: check.Upgrade
// on the store of --db or --store; exit 1 when a run would break.
func cmdCheckUpgrade(ctx context.Context, fs *flag.FlagSet, up *upgradeFlags, pos []string, co checkOutput, stdout, stderr io.Writer) error {
	if len(pos) != 0 {
		fs.Usage()
		return &exitError{code: exitUsage, err: fmt.Errorf("--upgrade takes the new module; got another argument %q", pos[0])}
	}
	var statuses []store.RunStatus
	for _, s := range strings.Split(*up.runs, ",") {
		switch st := store.RunStatus(strings.TrimSpace(s)); st {
		case store.RunPending, store.RunRunning, store.RunSuspended:
			statuses = append(statuses, st)
		default:
			return &exitError{code: exitUsage, err: fmt.Errorf("--runs %q: want a comma-separated list of pending, running, suspended (the statuses of live runs)", *up.runs)}
		}
	}
	if err := checkEngine(co.engine); err != nil {
		return err
	}
	wasm, err := os.ReadFile(*up.module)
	if err != nil {
		return err
	}
	st, _, err := up.db.openStore(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }() // the check only reads the store
	cache := userCompileCache()
	workflow := fs.Lookup("workflow").Value.String()
	o := check.UpgradeOptions{Store: st, Workflow: workflow, Statuses: statuses, CacheDir: cache,
		DisableInterrupt: co.noInterrupt, LimitHint: limitflags.Flag, Engine: co.engine}
	if co.guest {
		o.GuestOutputFor = prefixedOutput(stderr)
	}
	if !co.quiet && !co.json {
		o.Progress = func(done int) {
			if done%100 == 0 {
				fmt.Fprintf(stderr, "\rchecking: %d runs", done)
			}
		}
	}
	r, err := check.Upgrade(ctx, wasm, o)
	if o.Progress != nil {
		fmt.Fprint(stderr, "\r")
	}
	if err != nil {
		return err
	}
	if co.json {
		if err := encodeJSON(stdout, upgradeJSON{Module: r.Module, Workflows: r.Workflows, Statuses: r.Statuses, OK: r.OK(),
			Summary: r.Summary(), Checked: len(r.Runs), Broken: r.Broken, Runs: r.Runs, ElapsedMS: r.Elapsed.Milliseconds()}, "  "); err != nil {
			return err
		}
	} else {
		// The details quote the stored runs' own ids and functions.
		var details strings.Builder
		r.Details(&details, *up.brokenOnly)
		fmt.Fprintf(stdout, "%s%s (%s)\n", printableLines(details.String()), printableLines(r.Summary()), r.Elapsed.Round(time.Millisecond))
	}
	if !r.OK() {
		return &exitError{code: exitFailed}
	}
	return nil
}
