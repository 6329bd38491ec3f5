package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// runsVerbs are the subcommands of `skein runs`, each in a file of its
// own (runs_list.go, runs_batch.go).
var runsVerbs = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"list":   runsList,
	"cancel": runsCancel,
}

func cmdRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verbs := slices.Sorted(func(yield func(string) bool) {
		for v := range runsVerbs {
			if !yield(v) {
				return
			}
		}
	})
	verb, rest, err := subcommand("runs", args, strings.Join(verbs, ", "))
	if err != nil {
		return err
	}
	if verb == "help" {
		newFlagSet("runs", stderr).Usage()
		return flag.ErrHelp
	}
	if run, ok := runsVerbs[verb]; ok {
		return run(ctx, rest, stdout, stderr)
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown subcommand %q: want %s", verb, strings.Join(verbs, ", "))}
}
