package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// resetFlags are the flags of skein reset that say what the new run is.
type resetFlags struct {
	to, module, input, id *string
	asJSON                *bool
}

func addResetFlags(fs *flag.FlagSet) *resetFlags {
	return &resetFlags{
		to:     fs.String("to", "", "the key of the settled op to execute again, with everything that follows it (skein inspect RUN lists the keys)"),
		module: fs.String("module", "", "the module the new run executes: a deployed module's name or hash, or (with --db) a .wasm file; default: the run's own"),
		input:  fs.String("input", "", "the new run's input (JSON); default: the run's own"),
		id:     fs.String("id", "", "the new run's id; default: RUN~reset-N"),
		asJSON: fs.Bool("json", false, "print the new run as JSON"),
	}
}

// cmdReset resets a run (docs/api.md "Resetting a run"): on a server, it
// asks POST /v1/runs/{id}/reset and prints the new run, which the
// server's workers execute; with --db or --store, it resets the run in
// that database and drives the new run here, like skein resume.
func cmdReset(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reset", stderr)
	dbf := addDBFlags(fs, true, true)
	dbf.orServer = true
	sf := addServerFlags(fs)
	rf := addResetFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *rf.to == "" {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("want exactly one RUN id and --to KEY")}
	}
	if *rf.input != "" {
		if err := checkJSONFlag("--input", *rf.input); err != nil {
			return err
		}
	}
	req := client.ResetRequest{To: *rf.to, Module: *rf.module, ID: *rf.id}
	if *rf.input != "" {
		req.Input = json.RawMessage(*rf.input)
	}
	if sf.chosen(fs) {
		c, err := sf.client()
		if err != nil {
			return err
		}
		r, err := c.Reset(ctx, pos[0], req)
		if err != nil {
			return err
		}
		if *rf.asJSON {
			return printJSON(stdout, r)
		}
		fmt.Fprintf(stdout, "run %s reset to %s as run %s (%s)\n", printable(pos[0]), printable(r.ResetKey), printable(r.ID), printable(r.Status))
		return nil
	}
	return resetLocal(ctx, dbf, pos[0], req, *rf.asJSON, stdout)
}

// resetLocal resets run id in the database dbf opens and drives the new
// run to its end or suspension, then prints it.
func resetLocal(ctx context.Context, dbf *dbFlags, id string, req client.ResetRequest, asJSON bool, stdout io.Writer) error {
	h, st, closeAll, err := dbf.open(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	if strings.HasSuffix(req.Module, ".wasm") {
		wasm, err := os.ReadFile(req.Module)
		if err != nil {
			return err
		}
		m, err := h.Deploy(ctx, fileModuleName(ctx, st, req.Module, wasm), wasm)
		if err != nil {
			return err
		}
		req.Module = m.Hash
	}
	r, err := h.Reset(ctx, host.ResetOptions{RunID: id, ToKey: req.To, Module: req.Module, Input: req.Input, NewID: req.ID})
	if errors.Is(err, store.ErrNotFound) && !strings.Contains(err.Error(), "module") {
		return fmt.Errorf("no run %q in this database", id)
	} else if err != nil {
		return err
	}
	if !asJSON {
		fmt.Fprintf(stdout, "run %s reset to %s as run %s\n", printable(id), printable(req.To), printable(r.ID))
	}
	if _, err := h.Drive(ctx, r.ID, host.DriveOptions{WaitTimers: true}); err != nil && !host.IsDivergence(err) {
		return err
	}
	return printRun(ctx, h, r.ID, asJSON, stdout)
}

// printReset prints the links of a reset: the run and key a run was reset
// from, the run it was reset as.
func printReset(w io.Writer, from, key, to string) {
	if from != "" {
		fmt.Fprintf(w, "reset from: %s at %s\n", printable(from), printable(key))
	}
	if to != "" {
		fmt.Fprintf(w, "reset as: %s\n", printable(to))
	}
}
