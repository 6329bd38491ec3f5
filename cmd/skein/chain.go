package main

import (
	"context"
	"fmt"
	"io"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// What the CLI does with a run that continued as new (docs/api.md,
// "Continue-as-new").

// driveChain drives run id and, while the run it drove continues as new
// (skein.ContinueAsNew), its successor: `skein run` runs the workflow to
// its end, whichever run of the chain that is. It returns the last run.
func driveChain(ctx context.Context, h *host.Host, id string, o host.DriveOptions, asJSON bool, stdout io.Writer) (store.Run, error) {
	r, err := h.Drive(ctx, id, o)
	for err == nil && r.Status == store.RunContinued {
		next := host.ContinuedRunID(r.ID)
		if !asJSON {
			fmt.Fprintf(stdout, "run %s continued as new as run %s\n", printable(r.ID), printable(next))
		}
		r, err = h.Drive(ctx, next, o)
	}
	return r, err
}

// printChain prints the runs a run continued from and as, if any.
func printChain(w io.Writer, from, as string) {
	if from != "" {
		fmt.Fprintf(w, "continued from: %s\n", printable(from))
	}
	if as != "" {
		fmt.Fprintf(w, "continued as: %s\n", printable(as))
	}
}

// printParentClose prints a child run's policy for its parent's end, and
// whether its parent abandoned it.
func printParentClose(w io.Writer, policy string, abandoned bool) {
	if abandoned {
		fmt.Fprintln(w, "abandoned: its parent ended first and left it running (parent close: abandon)")
		return
	}
	if policy != "" {
		fmt.Fprintf(w, "parent close: %s\n", printable(policy))
	}
}
