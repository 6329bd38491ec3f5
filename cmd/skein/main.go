// Command skein runs durable workflows compiled to WebAssembly.
//
//	skein run MODULE.wasm [--workflow NAME] [--input JSON] [--id RUN] [--db FILE] [--evict never|idle|always] [--json]
//	skein inspect RUN [--db FILE | --server URL] [--json]
//	skein reset RUN --to KEY [--module M] [--input JSON] [--id NEW] [--server URL | --db FILE] [--json]
//	skein serve [--db FILE] [--addr 127.0.0.1:7070] [--token TOKEN]
//	skein deploy|start|status|wait|resolve|cancel|pause|unpause|schedule|hook|attribute|namespace ... [--server URL] [--token TOKEN]
//	skein runs list|cancel|pause|unpause|resume|reset|delete|prune ... | skein batch list|status|cancel ... [--server URL]
//	skein check MODULE.wasm [--workflow W] [--input JSON] [--schedules N] [--seed S] [--json]
//	skein bench [--workload NAME] [--durability normal|strict|both] [--json]
//	skein new NAME [--skein-dir PATH]
//
// Run `skein help` or `skein COMMAND --help` for details.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// Exit codes.
const (
	exitFailed = 1 // the run failed, diverged, or an operation failed
	exitUsage  = 2 // bad command line
)

type command struct {
	name, usage, summary string
	run                  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands []command

func init() {
	commands = []command{
		{"run", "skein run MODULE.wasm [--workflow NAME] [--input JSON] [--id RUN] [--db FILE] [--evict never|idle|always] [--json]",
			"run a workflow to completion in this process against embedded SQLite", cmdRun},
		{"inspect", "skein inspect RUN [--db FILE | --server URL] [--json]",
			"show a stored run and its outcome table (from a server with --server or $SKEIN_SERVER and no --db)", cmdInspect},
		{"resume", "skein resume RUN --module NEW.wasm [--db FILE] [--json] [--guest-output]\n       skein resume RUN [--module NAME|HASH|NEW.wasm] --server URL [--json]",
			"continue a suspended, paused, diverged or failed run against another module version, replaying its history (in this process, or with --server by the server's workers)", cmdResume},
		{"reset", "skein reset RUN --to KEY [--module M] [--input JSON] [--id NEW] [--server URL | --db FILE] [--json]",
			"make a new run from a run's journal up to the op at KEY and execute it from there (on a server, or in a local database, driven here); the run ends reset (docs/api.md, \"Resetting a run\")", cmdReset},
		{"serve", "skein serve [--db FILE | --store postgres://...] [--addr 127.0.0.1:7070] [--token TOKEN] [--cache-dir DIR] [--grace D] [--retention 30d]",
			"serve the HTTP API (docs/api.md) and execute runs: the worker pool and timer service", cmdServe},
		{"deploy", "skein deploy MODULE.wasm [--name NAME] [--server URL] [--json]",
			"upload a module to a server", cmdDeploy},
		{"modules", "skein modules [--server URL] [--json]",
			"list the modules on a server, each with every name that points at it", cmdModules},
		{"start", "skein start MODULE [--workflow NAME] [--input JSON] [--id RUN] [--timeout D] [--attr NAME=VALUE]... [--server URL] [--json]",
			"start a run on a server (MODULE: a deployed module's name or hash)", cmdStart},
		{"status", "skein status RUN [--server URL] [--json]",
			"show a run's status on a server", cmdStatus},
		{"wait", "skein wait RUN [--issued KEY] [--follow] [--timeout D] [--server URL] [--json]",
			"wait until a run on a server ends, then print its result (exit 1 if it failed, diverged or was canceled; a run that continued as new ends it, unless --follow)", cmdWait},
		{"resolve", "skein resolve PROMISE --value JSON | --error TEXT [--server URL]",
			"settle an external promise (id {run}.{key}) on a server", cmdResolve},
		{"cancel", "skein cancel RUN [--reason TEXT] [--server URL] [--json]",
			"cancel a run on a server", cmdCancel},
		{"pause", "skein pause RUN [--reason TEXT] [--server URL] [--json]",
			"hold a run on a server: it is not executed until unpaused; timers and settlements are kept (docs/operations.md, \"Pausing runs\")", cmdPause},
		{"unpause", "skein unpause RUN [--server URL] [--json]",
			"let a paused run on a server execute again", cmdUnpause},
		{"schedule", "skein schedule create NAME --cron EXPR --module M [--workflow W] [--input JSON] [--overlap skip|buffer-one|allow] [--catchup D] [--timezone TZ] | list | pause|resume|delete|trigger NAME [--server URL] [--json]",
			"start runs of a workflow on a cron schedule, on a server (docs/schedules.md)", cmdSchedule},
		{"hook", "skein hook create NAME --module M [--workflow W] [--secret-env SKEIN_HOOK_VAR | --secret NAME] [--scheme github|timestamped] [--tolerance D] [--keep-header H] | list | delete NAME [--server URL] [--json]",
			"bind a webhook, POST /v1/hooks/NAME, to a workflow on a server (docs/schedules.md)", cmdHook},
		{"runs", runsUsage(),
			"act on many runs: list those a filter selects, cancel, pause, unpause, resume, reset or delete them as a batch on a server (\"Bulk actions\"), prune the runs that ended before a horizon (\"Retention\"; docs/operations.md)", cmdRuns},
		{"batch", "skein batch list | status ID | cancel ID [--reason R] [--server URL] [--json]",
			"list the batches on a server, show one's progress, cancel one", cmdBatch},
		{"attribute", "skein attribute create NAME --type string|int|float|bool|time | list | delete NAME [--server URL] [--json]",
			"declare, list and delete the search attributes runs carry, on a server (docs/operations.md, \"Search attributes\")", cmdAttribute},
		{"namespace", "skein namespace create NAME [--description T] [--retention D] [--weight N] | list | describe NAME | update NAME [--description T] [--retention D] [--weight N] | delete NAME [--server URL] [--json]",
			"create, list, describe, update and delete the namespaces of a server (docs/tenants.md, \"Namespaces\")", cmdNamespace},
		{"key", "skein key create --namespace NS --role read|run|deploy|worker|admin|root [--name LABEL] [--expires D] [--activity NAME]... | list | revoke ID | rotate ID [--server URL] [--json]",
			"create, list, revoke and rotate the API keys of a server; a secret is printed once (docs/security.md, \"API keys and roles\")", cmdKey},
		{"backup", "skein backup [--db FILE] OUT.db [--quiet] [--json]",
			"write a consistent copy of a SQLite database, also while skein serve writes it (docs/operations.md, \"Backups\")", cmdBackup},
		{"new", "skein new NAME [--skein-dir PATH]",
			"write a workflow module skeleton in NAME/: go.mod (replacing skein with a local checkout), main.go, main_test.go, Makefile", cmdNew},
		{"check", "skein check MODULE.wasm [--workflow W] [--input JSON] [--schedules N] [--seed S] [--schedule K --crash-at T] [--activity NAME=JSON] [--json]\n       skein check --upgrade NEW.wasm [--db FILE | --store URL] [--workflow W] [--runs suspended,running] [--broken-only] [--json]",
			"prove hermetically that a workflow replays exactly from every crash point and that its ids do not depend on timing; with --upgrade, that every live run replays against a new module", cmdCheck},
		{"bench", "skein bench [--workload NAME[,NAME]] [--durability normal|strict|both] [--interrupt on|off|both] [--json] [--module bin/bench.wasm] [--quick]",
			"run the performance workloads through the real host and print one line per figure (docs/PERFORMANCE.md)", cmdBench},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(runMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	if args[0] == benchWorkerCommand { // hidden: `skein bench` runs it (bench.go)
		if err := cmdBenchWorker(ctx, args[1:], stderr); err != nil {
			fmt.Fprintln(stderr, "skein "+benchWorkerCommand+":", err)
			return exitFailed
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			if err == nil {
				return 0
			}
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			var ee *exitError
			if errors.As(err, &ee) {
				if ee.err != nil && ee.err.Error() != "" {
					fmt.Fprintln(stderr, "skein "+c.name+":", printableLines(clientText(ee.err)))
				}
				return ee.code
			}
			// Errors may quote a run's own text (a server's answer, a
			// guest's error).
			fmt.Fprintln(stderr, "skein "+c.name+":", printableLines(clientText(err)))
			return exitFailed
		}
	}
	fmt.Fprintf(stderr, "skein: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "skein runs durable workflows compiled to WebAssembly.")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'skein COMMAND --help' for a command's flags.")
}

// parseFlags parses flags that may come before or after positional
// arguments, and returns the positional ones. --help prints the
// command's usage and every flag; a bad flag gives one line and the
// command's usage hint.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(out)
				usage()
				return nil, err
			}
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("%w\n%s", err, usageHint(fs.Name()))}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// usageHint is the line a bad flag of command c prints after its error.
func usageHint(c string) string {
	for _, cmd := range commands {
		if cmd.name == c {
			return fmt.Sprintf("usage: %s ('skein %s --help' lists every flag)", cmd.usage, c)
		}
	}
	return fmt.Sprintf("('skein %s --help' lists every flag)", c)
}

func newFlagSet(c string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(c, flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, cmd := range commands {
		if cmd.name == c {
			fs.Usage = func() {
				fmt.Fprintf(stderr, "usage: %s\n\n%s.\n\nFlags:\n", cmd.usage, cmd.summary)
				fs.PrintDefaults()
			}
		}
	}
	return fs
}
