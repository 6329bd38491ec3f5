package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/skeinrun/skein/client"
)

// runsList: skein runs list [--where FILTER] [--limit N] [--all] [--json].
func runsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("runs", stderr)
	sf := addServerFlags(fs)
	where := fs.String("where", "", "a filter (docs/operations.md, \"Bulk actions\"), e.g. 'status = failed and ended > -2h'")
	limit := fs.Int("limit", 100, "the most runs listed (1 to 1000 a page)")
	all := fs.Bool("all", false, "list every run the filter selects, page after page")
	asJSON := fs.Bool("json", false, "print the runs as JSON (one RunList per page)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("runs list: unexpected argument %q (quote the filter: --where '...')", pos[0])}
	}
	c, err := sf.client()
	if err != nil {
		return err
	}
	f := client.RunFilter{Where: *where, Limit: *limit}
	for n := 0; ; {
		l, err := c.Runs(ctx, f)
		if err != nil {
			return err
		}
		if *asJSON {
			if err := printJSON(stdout, l); err != nil {
				return err
			}
		} else {
			for _, r := range l.Runs {
				printRunLine(stdout, r)
			}
			if n == 0 && len(l.Runs) == 0 {
				fmt.Fprintln(stdout, "no runs")
			}
		}
		n += len(l.Runs)
		if !*all || l.NextCursor == "" {
			if !*asJSON && l.NextCursor != "" {
				fmt.Fprintf(stderr, "(more runs follow: --all lists them)\n")
			}
			return nil
		}
		f.Cursor = l.NextCursor
	}
}

// printRunLine prints a run as one line: id, status, workflow, when it
// was created, and its error.
func printRunLine(w io.Writer, r client.Run) {
	line := fmt.Sprintf("%s  %s  %s  %s", printable(r.ID), printable(r.Status), printable(r.Workflow), r.CreatedAt.UTC().Format(time.RFC3339))
	if r.Error != "" {
		line += "  " + printable(r.Error)
	}
	fmt.Fprintln(w, line)
}
