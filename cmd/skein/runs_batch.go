package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/skeinrun/skein/client"
)

// The bulk actions of the CLI: `skein runs cancel --where ...` starts a
// batch (POST /v1/batches) and follows it; `skein batch` lists batches,
// shows one, cancels one.

// batchFlags are the flags of every `skein runs ACTION --where` command.
type batchFlags struct {
	sf     *serverFlags
	where  *string
	dryRun *bool
	rate   *float64
	detach *bool
	asJSON *bool
}

func addBatchFlags(fs *flag.FlagSet) *batchFlags {
	return &batchFlags{sf: addServerFlags(fs),
		where:  fs.String("where", "", "the runs to act on: a filter (docs/operations.md, \"Bulk actions\"); required"),
		dryRun: fs.Bool("dry-run", false, "list the runs the batch would act on (the first 1000) and act on none"),
		rate:   fs.Float64("rate", 0, "runs acted on per second, at most (default: the server's, 50)"),
		detach: fs.Bool("detach", false, "print the batch's id and return; do not follow its progress"),
		asJSON: fs.Bool("json", false, "print the batch (or the dry run) as JSON")}
}

// runBatch parses the flags, then starts the batch of action with the
// arguments actionArgs returns (or its dry run) and follows it until it
// ends.
func (b *batchFlags) runBatch(ctx context.Context, fs *flag.FlagSet, args []string, action string, actionArgs func() any, stdout, stderr io.Writer) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *b.where == "" {
		fs.Usage()
		return &exitError{code: exitUsage, err: fmt.Errorf("runs %s: want --where FILTER and no argument (quote the filter)", action)}
	}
	c, err := b.sf.client()
	if err != nil {
		return err
	}
	raw, err := json.Marshal(actionArgs())
	if err != nil {
		return err
	}
	req := client.BatchRequest{Where: *b.where, Action: action, Args: raw, Rate: *b.rate}
	if *b.dryRun {
		d, err := c.DryRunBatch(ctx, req)
		if err != nil {
			return err
		}
		if *b.asJSON {
			return printJSON(stdout, d)
		}
		for _, r := range d.Runs {
			printRunLine(stdout, r)
		}
		more := ""
		if d.More {
			more = " (and more)"
		}
		fmt.Fprintf(stdout, "dry run: %s would act on %d runs%s; nothing was done\n", action, len(d.Runs), more)
		return nil
	}
	bt, err := c.StartBatch(ctx, req)
	if err != nil {
		return err
	}
	if *b.detach {
		if *b.asJSON {
			return printJSON(stdout, bt)
		}
		fmt.Fprintf(stdout, "batch %s: started (skein batch status %s)\n", bt.ID, bt.ID)
		return nil
	}
	return followBatch(ctx, c, bt, *b.asJSON, stdout, stderr)
}

// followBatch prints a batch's progress as it changes until it ends;
// exit 1 if it ended with failed runs, was canceled or failed.
func followBatch(ctx context.Context, c *client.Client, bt client.Batch, asJSON bool, stdout, stderr io.Writer) error {
	last := ""
	for {
		if line := batchLine(bt); line != last && !asJSON {
			fmt.Fprintln(stdout, line)
			last = line
		}
		if bt.Status != "running" {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(stderr, "batch %s goes on on the server (skein batch status %s; skein batch cancel %s)\n", bt.ID, bt.ID, bt.ID)
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		var err error
		if bt, err = c.Batch(ctx, bt.ID); err != nil {
			return err
		}
	}
	if asJSON {
		if err := printJSON(stdout, bt); err != nil {
			return err
		}
	} else {
		printBatchErrors(stdout, bt)
	}
	if bt.Status != "done" || bt.Failed > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("batch %s %s: %d of %d runs failed", bt.ID, bt.Status, bt.Failed, bt.Selected)}
	}
	return nil
}

// batchLine is a batch's progress in one line.
func batchLine(b client.Batch) string {
	line := fmt.Sprintf("batch %s: %s %s, %d selected, %d done, %d failed", b.ID, b.Action, b.Status, b.Selected, b.Done, b.Failed)
	if b.Cancel != "" {
		line += " (cancel: " + printable(b.Cancel) + ")"
	}
	return line
}

func printBatchErrors(w io.Writer, b client.Batch) {
	for _, e := range b.Errors {
		if e.Run == "" {
			fmt.Fprintf(w, "  %s\n", printable(e.Error))
		} else {
			fmt.Fprintf(w, "  %s: %s\n", printable(e.Run), printable(e.Error))
		}
	}
	if n := int(b.Failed) - len(b.Errors); n > 0 {
		fmt.Fprintf(w, "  (and %d more errors)\n", n)
	}
}

// runsCancel: skein runs cancel --where FILTER [--reason R] [--dry-run].
func runsCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("runs", stderr)
	b := addBatchFlags(fs)
	reason := fs.String("reason", "", "why (recorded with each run; default \"canceled\")")
	return b.runBatch(ctx, fs, args, "cancel", func() any {
		return struct {
			Reason string `json:"reason,omitempty"`
		}{*reason}
	}, stdout, stderr)
}

// cmdBatch: skein batch list | status ID | cancel ID [--reason R].
func cmdBatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verb, rest, err := subcommand("batch", args, "list, status or cancel")
	if err != nil {
		return err
	}
	fs := newFlagSet("batch", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print as JSON")
	reason := fs.String("reason", "", "why the batch is canceled (cancel)")
	switch verb {
	case "help":
		fs.Usage()
		return flag.ErrHelp
	case "list":
		return batchList(ctx, fs, sf, rest, asJSON, stdout)
	case "status", "cancel":
		c, id, err := sf.parse(fs, rest, "batch id")
		if err != nil {
			return err
		}
		var bt client.Batch
		if verb == "cancel" {
			bt, err = c.CancelBatch(ctx, id, *reason)
		} else {
			bt, err = c.Batch(ctx, id)
		}
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, bt)
		}
		fmt.Fprintln(stdout, batchLine(bt))
		fmt.Fprintf(stdout, "  where: %s\n", printable(bt.Where))
		printBatchErrors(stdout, bt)
		return nil
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown subcommand %q: want list, status or cancel", verb)}
}

func batchList(ctx context.Context, fs *flag.FlagSet, sf *serverFlags, args []string, asJSON *bool, stdout io.Writer) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("batch list: unexpected argument %q", pos[0])}
	}
	c, err := sf.client()
	if err != nil {
		return err
	}
	bs, err := c.Batches(ctx, 0)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, client.BatchList{Batches: bs})
	}
	if len(bs) == 0 {
		fmt.Fprintln(stdout, "no batches")
	}
	for _, b := range bs {
		fmt.Fprintln(stdout, batchLine(b))
	}
	return nil
}
