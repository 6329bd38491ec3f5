package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/limitflags"
	"github.com/skeinrun/skein/internal/runjson"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/postgres"
	"github.com/skeinrun/skein/store/sqlite"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", stderr)
	workflow := fs.String("workflow", "", "workflow to run (default: the module's only workflow)")
	input := fs.String("input", "null", "workflow input as JSON")
	id := fs.String("id", "", "run id (default: generated); an id that has ended prints its stored run, one that another process executes is waited for (--lease-wait), then printed")
	dbf := addDBFlags(fs, true, false)
	dbf.limits = addLimitFlags(fs, true)
	asJSON := fs.Bool("json", false, "print the run as JSON")
	leaseWait := fs.Duration("lease-wait", defaultLeaseWait, "how long to wait for a run another process executes (it holds the run's lease) before giving up; 0: give up at once")
	guestOut := fs.Bool("guest-output", false, guestOutputUsage)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("want exactly one MODULE.wasm")}
	}
	if err := checkJSONFlag("--input", *input); err != nil {
		return err
	}
	if *guestOut {
		dbf.guestOutput = prefixedOutput(stderr)
	}
	// A run that fails before any run exists (no module file, a module
	// that does not load, an unknown workflow, an input of the wrong
	// shape) leaves no database behind if it made one: the next command
	// then says "no database", not "no run".
	created := false
	defer dbf.removeIfNew(&created)()
	h, st, closeAll, err := dbf.open(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	if *id != "" {
		// A finished run is printed as stored: no compile, no module file needed.
		if r, err := st.Run(ctx, *id); err == nil && r.Status.Terminal() {
			given := "" // --input, if given: compared with the run's
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "input" {
					given = *input
				}
			})
			if err := spentID(r, *workflow, given); err != nil {
				return err
			}
			if !*asJSON {
				printExecutions(stdout, r, 0)
			}
			return printRun(ctx, h, r.ID, *asJSON, stdout)
		}
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}

	m, err := h.Deploy(ctx, fileModuleName(ctx, st, pos[0], wasm), wasm)
	if err != nil {
		return err
	}
	wf, err := onlyWorkflow(*workflow, m.Workflows, pos[0])
	if err != nil {
		return err
	}
	r, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: wf, Input: json.RawMessage(*input), ID: *id, ClaimForDrive: true})
	if err != nil {
		return err
	}
	created = true
	execs := 0
	r, err = driveChain(ctx, h, r.ID, host.DriveOptions{WaitTimers: true, OnExecution: func() { execs++ },
		LeaseWait: *leaseWait, OnLeaseWait: leaseWaitNote(stderr, *leaseWait)}, *asJSON, stdout)
	if err != nil && !host.IsDivergence(err) {
		return err
	}
	if !*asJSON {
		printExecutions(stdout, r, execs)
	}
	if err := printRun(ctx, h, r.ID, *asJSON, stdout); err != nil {
		return err
	}
	if !*asJSON && r.Status == store.RunSuspended {
		fmt.Fprintf(stdout, "\nrun %s is suspended: nothing in this process settles what it waits on; serve this database (%s) and settle its promises there, or continue it on other code with skein resume %s --module NEW.wasm\n",
			printable(r.ID), dbf.serveHint(), printable(r.ID))
	}
	return nil
}

// onlyWorkflow is the workflow named, or the module's only one.
func onlyWorkflow(name string, workflows []string, file string) (string, error) {
	if name != "" {
		return name, nil
	}
	if len(workflows) != 1 {
		return "", &exitError{code: exitUsage, err: fmt.Errorf("%s registers %d workflows (%s): choose one with --workflow", file, len(workflows), strings.Join(workflows, ", "))}
	}
	return workflows[0], nil
}

// printExecutions says how many executions skein run made of run r.
func printExecutions(stdout io.Writer, r store.Run, execs int) {
	switch execs {
	case 0:
		fmt.Fprintf(stdout, "run %s was already %s: printing the stored run, nothing executed\n", printable(r.ID), r.Status)
	case 1:
		fmt.Fprintln(stdout, "executions: 1 (no replay)")
	case 2:
		fmt.Fprintln(stdout, "executions: 2 (replayed from the journal once)")
	default:
		fmt.Fprintf(stdout, "executions: %d (replayed from the journal %d times)\n", execs, execs-1)
	}
}

// serveHint is the `skein serve` command for the database of the flags.
func (f *dbFlags) serveHint() string {
	if *f.store != "" {
		return "skein serve --store URL"
	}
	return "skein serve --db " + *f.db
}

func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect", stderr)
	dbf := addDBFlags(fs, false, true)
	dbf.orServer = true
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the run as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("want exactly one RUN id")}
	}
	if sf.chosen(fs) {
		return inspectRemote(ctx, sf, pos[0], *asJSON, stdout)
	}
	h, _, closeAll, err := dbf.open(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	return printRun(ctx, h, pos[0], *asJSON, stdout)
}

func cmdResume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("resume", stderr)
	module := fs.String("module", "", "the module version to continue with (.wasm file; with --server also a deployed module's name or hash); default: the run's own module")
	dbf := addDBFlags(fs, true, true)
	dbf.orServer = true
	sf := addServerFlags(fs)
	leaseWait := fs.Duration("lease-wait", defaultLeaseWait, "how long to wait for a run another process executes (it holds the run's lease) before giving up; 0: give up at once")
	asJSON := fs.Bool("json", false, "print the run as JSON")
	guestOut := fs.Bool("guest-output", false, guestOutputUsage)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("want exactly one RUN id")}
	}
	if sf.chosen(fs) {
		return resumeRemote(ctx, sf, pos[0], *module, *asJSON, stdout)
	}
	if *guestOut {
		dbf.guestOutput = prefixedOutput(stderr)
	}
	h, st, closeAll, err := dbf.open(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	// A completed or canceled run is refused before the module is read or
	// compiled (Resume checks again under the run's lease).
	if r, err := st.Run(ctx, pos[0]); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no run %q in this database", pos[0])
	} else if err != nil {
		return err
	} else if r.Status.Final() {
		return endedError(r)
	}
	hash := ""
	if *module != "" {
		wasm, err := os.ReadFile(*module)
		if err != nil {
			return err
		}
		m, err := h.Deploy(ctx, fileModuleName(ctx, st, *module, wasm), wasm)
		if err != nil {
			return err
		}
		hash = m.Hash
	}
	o := host.DriveOptions{WaitTimers: true, LeaseWait: *leaseWait, OnLeaseWait: leaseWaitNote(stderr, *leaseWait)}
	if r, err := h.Resume(ctx, pos[0], hash, o); err != nil && !host.IsDivergence(err) {
		if errors.Is(err, host.ErrTerminal) { // it ended while this waited for its lease
			return endedError(r)
		}
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no run %q in this database", pos[0])
		}
		return err
	}
	return printRun(ctx, h, pos[0], *asJSON, stdout)
}

// spentID refuses to print a run that ended as the answer to another
// request under its id: it says that the id is spent and how to start a
// new run. An empty workflow (the module's only one) or input (the flag
// was not given) is not compared.
func spentID(r store.Run, workflow, input string) error {
	what := ""
	switch {
	case workflow != "" && workflow != r.Workflow:
		what = "workflow (" + printable(r.Workflow) + ")"
	case input != "" && !sameJSON(r.Input, []byte(input)):
		what = fmt.Sprintf("input (%.100s)", printable(string(r.Input)))
	default:
		return nil
	}
	msg := fmt.Sprintf("run %s ended %s with another %s; a run id names one run for good: start a new run with another --id (or none, for a generated one)",
		printable(r.ID), r.Status, what)
	if !r.Status.Final() {
		msg += fmt.Sprintf(", or continue this one on fixed code with skein resume %s --module NEW.wasm", printable(r.ID))
	}
	return errors.New(msg)
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// endedError is skein resume's refusal of a completed or canceled run.
func endedError(r store.Run) error {
	if r.Status == store.RunContinued {
		return fmt.Errorf("run %s is continued: it continued as new as run %s and is never resumed; nothing executed", printable(r.ID), printable(host.ContinuedRunID(r.ID)))
	}
	return fmt.Errorf("run %s is %s: a completed or canceled run is final and is never resumed; nothing executed", printable(r.ID), r.Status)
}

// defaultLeaseWait is the default of --lease-wait: how long `skein run`
// and `skein resume` wait for a run that another process executes.
const defaultLeaseWait = time.Minute

// leaseWaitNote returns the DriveOptions.OnLeaseWait of run and resume: a
// line on stderr saying who executes the run and how long this waits.
func leaseWaitNote(stderr io.Writer, wait time.Duration) func(store.Lease) {
	return func(held store.Lease) {
		fmt.Fprintf(stderr, "skein: %s; waiting up to %s for it to finish\n", &store.LeaseHeldError{Lease: held}, wait)
	}
}

// dbFlags are the flags every command that opens the database shares.
type dbFlags struct {
	db, evict, durability *string
	store                 *string // a postgres:// URL; replaces --db
	fs                    *flag.FlagSet
	mustExist             bool
	orServer              bool                       // the command reads a server too (--server): say so when the file is missing
	limits                *limitFlags                // if set, the resource limits (limits.go)
	guestOutput           func(run string) io.Writer // if set, host.Config.GuestOutputFor
	// Commands that execute runs (withEvict) check a SQLite file's
	// integrity when they open it, unless told not to, and may cap its size.
	skipCheck *bool
	maxBytes  *int64
	engine    *string // host.Config.Engine (withEvict)
}

// addDBFlags adds the flags of the database; withEvict for the commands
// that execute runs (run, resume, serve).
func addDBFlags(fs *flag.FlagSet, withEvict, mustExist bool) *dbFlags {
	f := &dbFlags{mustExist: mustExist, fs: fs}
	f.db = fs.String("db", "skein.db", "SQLite database file")
	f.store = fs.String("store", "", "PostgreSQL database URL (postgres://...) to use instead of --db")
	f.durability = fs.String("durability", "normal", "normal (survives a process crash) or strict (survives power loss)")
	if withEvict {
		f.evict = fs.String("evict", "idle", "when to drop the instance: never, idle, or always (replay at every wait; for tests)")
		f.skipCheck = fs.Bool("skip-integrity-check", false, "open the SQLite file without checking it first (PRAGMA quick_check); a damaged file is refused otherwise")
		f.maxBytes = fs.Int64("db-max-bytes", 0, "largest size of the SQLite file in bytes; a commit that would grow it further fails as on a full disk (0: no limit)")
		f.engine = addEngineFlag(fs)
	}
	return f
}

// removeIfNew returns a function that, unless *keep is true by then,
// removes the SQLite file of --db and its journal files if none of them
// existed when removeIfNew was called; it must run after the store is
// closed. With --store it does nothing.
func (f *dbFlags) removeIfNew(keep *bool) func() {
	files := []string{*f.db, *f.db + "-wal", *f.db + "-shm"}
	for _, p := range files {
		if _, err := os.Lstat(p); *f.store != "" || !errors.Is(err, iofs.ErrNotExist) {
			return func() {}
		}
	}
	return func() {
		if *keep {
			return
		}
		for _, p := range files {
			_ = os.Remove(p) // a scratch database: what is left is harmless
		}
	}
}

// checkExists fails when the SQLite file of --db does not exist, with a
// message that says what to pass instead.
func (f *dbFlags) checkExists() error {
	_, err := os.Stat(*f.db)
	if err == nil {
		return nil
	}
	if !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("database %s: %w", *f.db, err)
	}
	where := "no database " + *f.db
	if filepath.Dir(*f.db) == "." {
		where += " in this folder"
	}
	alt := ""
	if f.orServer {
		alt = ", or --server URL (or $SKEIN_SERVER) to read a skein server"
	}
	return fmt.Errorf("%s: pass --db FILE (the SQLite file that skein run or skein serve wrote), --store postgres://...%s", where, alt)
}

// openStore opens the store the flags name: the PostgreSQL database of
// --store, or else the SQLite file of --db. It also returns a description
// of it for logs (a URL without its password).
func (f *dbFlags) openStore(ctx context.Context, log *slog.Logger) (store.Store, string, error) {
	if *f.store == "" {
		if f.mustExist {
			if err := f.checkExists(); err != nil {
				return nil, "", err
			}
		}
		o := sqlite.Options{Durability: *f.durability, Logger: log, SkipIntegrityCheck: true}
		if f.skipCheck != nil {
			o.SkipIntegrityCheck, o.MaxBytes = *f.skipCheck, *f.maxBytes
		}
		if o.MaxBytes < 0 {
			return nil, "", &exitError{code: exitUsage, err: fmt.Errorf("--db-max-bytes %d: want 0 (no limit) or more", o.MaxBytes)}
		}
		st, err := sqlite.Open(ctx, *f.db, o)
		if err != nil {
			return nil, "", err
		}
		return st, *f.db, nil
	}
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["db"] || set["durability"] || set["skip-integrity-check"] || set["db-max-bytes"] {
		return nil, "", &exitError{code: exitUsage, err: errors.New("--store and --db (or --durability, --skip-integrity-check, --db-max-bytes) exclude each other")}
	}
	u, err := url.Parse(*f.store)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, "", &exitError{code: exitUsage, err: errors.New("--store: want a postgres:// URL")}
	}
	st, err := postgres.Open(ctx, *f.store, postgres.Options{Logger: log})
	if err != nil {
		return nil, "", err
	}
	return st, u.Redacted(), nil
}

// open opens the store and a host on it; close releases both.
func (f *dbFlags) open(ctx context.Context) (h *host.Host, st store.Store, close func(), err error) {
	if f.engine != nil {
		if err := checkEngine(*f.engine); err != nil {
			return nil, nil, nil, err
		}
	}
	policy := host.EvictIdle
	if f.evict != nil {
		if policy, err = host.ParseEvict(*f.evict); err != nil {
			return nil, nil, nil, &exitError{code: exitUsage, err: err}
		}
	}
	st, _, err = f.openStore(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg := host.Config{Store: st, Evict: policy, CacheDir: userCompileCache(), GuestOutputFor: f.guestOutput, LimitHint: limitflags.Flag}
	if f.engine != nil {
		cfg.Engine = *f.engine
	}
	if f.limits != nil {
		f.limits.apply(&cfg)
	}
	h, err = host.New(ctx, cfg)
	if err != nil {
		_ = st.Close() // the host's error is the one to return
		return nil, nil, nil, err
	}
	return h, st, func() {
		if err := errors.Join(h.Close(context.WithoutCancel(ctx)), st.Close()); err != nil {
			slog.Warn("skein: close the host and the store", "err", err)
		}
	}, nil
}

// printRun prints a stored run and its outcome table (or its JSON view);
// see printView.
func printRun(ctx context.Context, h *host.Host, id string, asJSON bool, w io.Writer) error {
	r, outs, err := h.Inspect(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no run %q in this database", id)
		}
		return err
	}
	v := runjson.From(r, outs)
	if v.Waiting != nil {
		ts, err := h.Tasks(ctx, id)
		if err != nil {
			return err
		}
		runjson.AddTasks(v.Waiting, ts, time.Now())
	}
	return printView(v, asJSON, w)
}

// printView prints a run and its outcome table, as text or as one JSON
// value. It returns an exitFailed error when the run failed, diverged or
// was canceled.
func printView(v client.OutcomeView, asJSON bool, w io.Writer) error {
	if asJSON {
		if err := printJSON(w, v); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "run %s (%s): %s\n", printable(v.Run), printable(v.Workflow), printable(v.Status))
		if len(v.Result) > 0 {
			fmt.Fprintf(w, "result: %s\n", printable(string(v.Result)))
		}
		if v.Error != nil {
			fmt.Fprintf(w, "error: %s\n", printable(*v.Error))
		}
		printChain(w, v.ContinuedFrom, v.ContinuedAs)
		printReset(w, v.ResetFrom, v.ResetKey, v.ResetTo)
		if v.Abandoned {
			printParentClose(w, "", true)
		}
		printPause(w, v.Paused)
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tFUNCTION\tSTATUS\tATTEMPTS\tVALUE")
		for _, o := range v.Outcomes {
			val := string(o.Value)
			if o.Error != nil {
				val = "error: " + *o.Error
			}
			if r := []rune(val); len(r) > 60 {
				val = string(r[:57]) + "..."
			}
			status := o.Status
			if o.Orphaned {
				status += " (orphaned)"
			}
			attempts := "" // an op without a body or an activity (a sleep, a promise) has none
			if o.Attempts > 0 {
				attempts = fmt.Sprint(o.Attempts)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(o.Key), printable(o.Function), printable(status), attempts, printable(val))
		}
		tw.Flush()
		printWaiting(w, v.Waiting, time.Now())
	}
	switch store.RunStatus(v.Status) {
	case store.RunFailed, store.RunDiverged, store.RunCanceled:
		return &exitError{code: exitFailed, err: fmt.Errorf("run %s %s", printable(v.Run), v.Status)}
	}
	return nil
}

// fileModuleName is the name `skein run` and `skein resume` deploy the
// module file path under: its base name, or none for a module stored
// already (deployed to a server sharing the database, say), which keeps
// the names it has rather than gaining the file's.
func fileModuleName(ctx context.Context, st store.Store, path string, wasm []byte) string {
	sum := sha256.Sum256(wasm)
	if _, err := st.ModuleInfo(ctx, hex.EncodeToString(sum[:])); err == nil {
		return ""
	}
	return strings.TrimSuffix(filepath.Base(path), ".wasm")
}

// engineUsage is the help of --engine.
const engineUsage = "WebAssembly engine (host.Config.Engine): wazero, or wasmtime in a binary built with -tags wasmtime (docs/engines.md)"

// addEngineFlag adds --engine.
func addEngineFlag(fs *flag.FlagSet) *string {
	return fs.String("engine", host.EngineWazero, engineUsage)
}

// checkEngine is a usage error for an engine this binary cannot run.
func checkEngine(name string) error {
	if err := host.CheckEngine(name); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	return nil
}
