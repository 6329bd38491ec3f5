package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
)

// Holding runs on a server: skein pause, skein unpause, and the server
// form of skein resume (docs/operations.md, "Pausing runs").

func cmdPause(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("pause", stderr)
	sf := addServerFlags(fs)
	reason := fs.String("reason", "", "why (shown with the run)")
	asJSON := fs.Bool("json", false, "print the run as JSON")
	c, arg, err := sf.parse(fs, args, "RUN id")
	if err != nil {
		return err
	}
	r, err := c.Pause(ctx, arg, *reason)
	if err != nil {
		return err
	}
	return printHeld(stdout, r, *asJSON, "paused")
}

func cmdUnpause(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("unpause", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the run as JSON")
	c, arg, err := sf.parse(fs, args, "RUN id")
	if err != nil {
		return err
	}
	r, err := c.Unpause(ctx, arg)
	if err != nil {
		return err
	}
	return printHeld(stdout, r, *asJSON, "unpaused")
}

// resumeRemote is skein resume --server: the server points the run at
// module (a deployed module's name or hash, or a .wasm file, deployed
// first) and its workers replay it.
func resumeRemote(ctx context.Context, sf *serverFlags, id, module string, asJSON bool, stdout io.Writer) error {
	c, err := sf.client()
	if err != nil {
		return err
	}
	if strings.HasSuffix(module, ".wasm") {
		wasm, err := os.ReadFile(module)
		if err != nil {
			return err
		}
		m, _, err := c.Deploy(ctx, "", wasm)
		if err != nil {
			return fmt.Errorf("deploy %s: %w", module, err)
		}
		module = m.Hash
	}
	r, err := c.ResumeOn(ctx, id, module)
	if err != nil {
		return err
	}
	return printHeld(stdout, r, asJSON, "resumed on module "+r.Module)
}

// printHeld prints the run a pause, unpause or resume answered.
func printHeld(w io.Writer, r client.Run, asJSON bool, what string) error {
	if asJSON {
		return printJSON(w, r)
	}
	fmt.Fprintf(w, "run %s: %s (%s)\n", printable(r.ID), what, printable(r.Status))
	printPause(w, r.Paused)
	return nil
}

// printPause prints who paused a run, why and since when; nothing for a
// run that is not paused.
func printPause(w io.Writer, p *client.Pause) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "paused by %s since %s", printable(p.By), p.Since.Format(time.RFC3339))
	if p.Reason != "" {
		fmt.Fprintf(w, ": %s", printable(p.Reason))
	}
	fmt.Fprintln(w)
}
