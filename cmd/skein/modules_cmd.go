package main

// skein modules: the modules a server holds, each with every name that
// points at it.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/skeinrun/skein/client"
)

func cmdModules(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("modules", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the modules as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("modules: unexpected argument %q", pos[0])}
	}
	c, err := sf.client()
	if err != nil {
		return err
	}
	ms, err := c.Modules(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, client.ModuleList{Modules: ms})
	}
	if len(ms) == 0 {
		fmt.Fprintln(stdout, "no modules")
	}
	for _, m := range ms {
		names := strings.Join(m.Names, ", ")
		if names == "" {
			names = "(unnamed)"
		}
		fmt.Fprintf(stdout, "%s  %s  %s\n", printable(names), printable(m.Hash[:min(12, len(m.Hash))]), printable(strings.Join(m.Workflows, ", ")))
	}
	return nil
}
