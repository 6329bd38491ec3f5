package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store/sqlite"
)

// `skein runs`: operations on many runs (docs/operations.md). Each
// subcommand is a line of runsSubcommands.

// runsSubcommand is one subcommand of `skein runs`.
type runsSubcommand struct {
	name, usage string
	run         func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// runsSubcommands are the subcommands of `skein runs`, in the order
// `skein runs --help` lists them.
var runsSubcommands = []runsSubcommand{
	{"list", "skein runs list [--where FILTER] [--limit N] [--all] [--json]", runsList},
	{"cancel", "skein runs cancel --where FILTER [--reason R] [--dry-run] [--rate N] [--detach] [--json]", runsCancel},
	{"pause", "skein runs pause --where FILTER [--reason R] [--dry-run] [--rate N] [--detach] [--json]", runsPause},
	{"unpause", "skein runs unpause --where FILTER [--dry-run] [--rate N] [--detach] [--json]", runsUnpause},
	{"resume", "skein runs resume --where FILTER [--module M] [--dry-run] [--rate N] [--detach] [--json]", runsResume},
	{"reset", "skein runs reset --where FILTER --to KEY [--module M] [--input JSON] [--dry-run] [--rate N] [--detach] [--json]", runsReset},
	{"delete", "skein runs delete --where FILTER [--dry-run] [--rate N] [--detach] [--json]", runsDelete},
	{"prune", "skein runs prune --before TIME | --older-than D [--dry-run] [--json] [--server URL | --db FILE [--vacuum] | --store URL]", runsPrune},
}

// runsUsage is the usage of `skein runs`: a line per subcommand.
func runsUsage() string {
	var lines []string
	for _, s := range runsSubcommands {
		lines = append(lines, s.usage)
	}
	return strings.Join(lines, "\n       ")
}

func cmdRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var names []string
	for _, s := range runsSubcommands {
		names = append(names, s.name)
	}
	verb, rest, err := subcommand("runs", args, strings.Join(names, ", "))
	if err != nil {
		return err
	}
	if verb == "help" {
		newFlagSet("runs", stderr).Usage()
		return flag.ErrHelp
	}
	for _, s := range runsSubcommands {
		if s.name == verb {
			return s.run(ctx, rest, stdout, stderr)
		}
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown subcommand %q: want %s", verb, strings.Join(names, ", "))}
}

// runsPrune is `skein runs prune`: against a server (--server or
// $SKEIN_SERVER, and no --db), else against the database of --db or
// --store.
func runsPrune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("runs", stderr)
	sf := addServerFlags(fs)
	dbf := addDBFlags(fs, false, true)
	dbf.orServer = true
	beforeArg := fs.String("before", "", "delete the runs that ended before this time (RFC 3339, e.g. 2026-11-01T00:00:00Z)")
	olderThan := fs.String("older-than", "", "delete the runs that ended longer ago than this: a duration (720h) or days (30d)")
	dryRun := fs.Bool("dry-run", false, "count the runs that would be deleted; delete nothing")
	vacuum := fs.Bool("vacuum", false, "with --db: then rebuild the file in auto_vacuum incremental mode, so that it shrinks as runs are pruned (a file made by an older skein; no server may be writing it)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	req, err := pruneRequest(*beforeArg, *olderThan, *dryRun)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	var res client.PruneResult
	if sf.chosen(fs) {
		if *vacuum {
			return &exitError{code: exitUsage, err: errors.New("--vacuum works on a local SQLite file (--db), not through a server")}
		}
		c, err := sf.client()
		if err != nil {
			return err
		}
		if res, err = c.Prune(ctx, req); err != nil {
			return err
		}
	} else if res, err = pruneLocal(ctx, dbf, req); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	printPrune(stdout, res)
	if !*vacuum {
		return nil
	}
	if *dbf.store != "" {
		return &exitError{code: exitUsage, err: errors.New("--vacuum works on a SQLite file (--db); PostgreSQL's autovacuum reuses the space")}
	}
	st, err := sqlite.Vacuum(ctx, *dbf.db)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "vacuumed %s (auto_vacuum was %s, now incremental): %d bytes, then %d\n", printable(*dbf.db), st.AutoVacuumBefore, st.BytesBefore, st.BytesAfter)
	return nil
}

// pruneRequest is the request the flags make: the horizon by --before
// or --older-than, one of them.
func pruneRequest(before, olderThan string, dryRun bool) (client.PruneRequest, error) {
	req := client.PruneRequest{DryRun: dryRun}
	switch {
	case (before == "") == (olderThan == ""):
		return req, errors.New("give the horizon with --before TIME or --older-than D, one of them")
	case before != "":
		t, err := time.Parse(time.RFC3339Nano, before)
		if err != nil {
			return req, fmt.Errorf("--before %q: want an RFC 3339 time such as 2026-11-01T00:00:00Z", before)
		}
		req.Before = &t
	default:
		if _, err := host.ParseAge(olderThan); err != nil {
			return req, fmt.Errorf("--older-than: %w", err)
		}
		req.OlderThan = olderThan
	}
	return req, nil
}

// pruneLocal prunes the database the flags name, in this process.
func pruneLocal(ctx context.Context, dbf *dbFlags, req client.PruneRequest) (client.PruneResult, error) {
	before := time.Now()
	if req.Before != nil {
		before = *req.Before
	} else {
		age, _ := host.ParseAge(req.OlderThan) // pruneRequest checked it
		before = before.Add(-age)
	}
	h, _, closeAll, err := dbf.open(ctx)
	if err != nil {
		return client.PruneResult{}, err
	}
	defer closeAll()
	rep, err := h.Prune(ctx, before, req.DryRun)
	if err != nil {
		return client.PruneResult{}, err
	}
	return client.PruneResult{Before: rep.Before.UTC(), DryRun: rep.DryRun, Runs: rep.Runs, Batches: rep.Batches,
		IDs: append([]string{}, rep.IDs...)}, nil
}

// printPrune prints what a prune did, or would do, and the runs (up to
// the 100 the answer lists).
func printPrune(w io.Writer, res client.PruneResult) {
	verb := "deleted"
	if res.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(w, "%s %d runs that ended before %s\n", verb, res.Runs, res.Before.Format(time.RFC3339))
	for _, id := range res.IDs {
		fmt.Fprintf(w, "  %s\n", printable(id))
	}
	if more := res.Runs - len(res.IDs); more > 0 {
		fmt.Fprintf(w, "  and %d more\n", more)
	}
}

// parseNoArgs parses the flags of a command that takes no positional
// argument, and refuses one.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return &exitError{code: exitUsage, err: fmt.Errorf("unexpected argument %q", pos[0])}
	}
	return nil
}
