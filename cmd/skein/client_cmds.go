package main

// The client commands: they talk to a `skein serve` over its HTTP API.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/store"
)

// parse parses a client command's flags, which take exactly one
// positional argument (what names it), and returns the server's client
// and the argument.
func (f *serverFlags) parse(fs *flag.FlagSet, args []string, what string) (*client.Client, string, error) {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, "", err
	}
	if err := oneArg(fs, pos, what); err != nil {
		return nil, "", err
	}
	c, err := f.client()
	if err != nil {
		return nil, "", err
	}
	return c, pos[0], nil
}

// oneArg checks that a command got exactly one positional argument.
func oneArg(fs *flag.FlagSet, pos []string, what string) error {
	if len(pos) != 1 {
		fs.Usage()
		return &exitError{code: exitUsage, err: fmt.Errorf("want exactly one %s", what)}
	}
	return nil
}

func cmdDeploy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("deploy", stderr)
	sf := addServerFlags(fs)
	name := fs.String("name", "", "module name to start runs by (default: the file name without .wasm)")
	asJSON := fs.Bool("json", false, "print the module as JSON")
	c, arg, err := sf.parse(fs, args, "MODULE.wasm")
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile(arg)
	if err != nil {
		return err
	}
	if *name == "" {
		*name = strings.TrimSuffix(filepath.Base(arg), ".wasm")
	}
	m, created, err := c.Deploy(ctx, *name, wasm)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, m)
	}
	verb := "deployed"
	if !created {
		verb = "already deployed (same bytes)"
	}
	fmt.Fprintf(stdout, "module %s %s\nhash: %s\nworkflows: %s\n", printable(m.Name), verb, printable(m.Hash), printable(strings.Join(m.Workflows, ", ")))
	if len(m.Names) > 1 {
		fmt.Fprintf(stdout, "names: %s\n", printable(strings.Join(m.Names, ", ")))
	}
	return nil
}

func cmdStart(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("start", stderr)
	sf := addServerFlags(fs)
	workflow := fs.String("workflow", "", "workflow to start (default: the module's only workflow)")
	input := fs.String("input", "null", "workflow input as JSON")
	id := fs.String("id", "", "run id (default: generated); starting an existing id with the same request returns that run")
	timeout := fs.Duration("timeout", 0, "cancel the run if it has not ended this long after it started (e.g. 30s, 2h)")
	attrs := attrFlag{}
	fs.Var(attrs, "attr", "an initial search attribute NAME=VALUE, VALUE read as the attribute's declared type (repeatable)")
	asJSON := fs.Bool("json", false, "print the run as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := oneArg(fs, pos, "MODULE (a deployed module's name or hash)"); err != nil {
		return err
	}
	if err := checkJSONFlag("--input", *input); err != nil {
		return err
	}
	if *timeout < 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--timeout %v is negative", *timeout)}
	}
	c, err := sf.client()
	if err != nil {
		return err
	}
	req := client.StartRequest{Module: pos[0], Workflow: *workflow, Input: json.RawMessage(*input), ID: *id}
	if req.Attributes, err = typedAttrs(ctx, c, attrs); err != nil {
		return err
	}
	if *timeout > 0 {
		req.Timeout = timeout.String()
	}
	r, created, err := c.Start(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, r)
	}
	if created {
		fmt.Fprintf(stdout, "run %s started (workflow %s)\n", printable(r.ID), printable(r.Workflow))
	} else {
		fmt.Fprintf(stdout, "run %s exists with the same request (%s): nothing started\n", printable(r.ID), printable(r.Status))
	}
	return nil
}

// orNull is a JSON value, null when empty.
func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// runFailure is the exit error for a run that did not complete.
func runFailure(id, status, msg string) error {
	switch store.RunStatus(status) {
	case store.RunFailed, store.RunDiverged, store.RunCanceled:
		if msg != "" {
			return &exitError{code: exitFailed, err: fmt.Errorf("run %s %s: %s", id, status, msg)}
		}
		return &exitError{code: exitFailed, err: fmt.Errorf("run %s %s", id, status)}
	}
	return nil
}

func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the run as JSON")
	c, arg, err := sf.parse(fs, args, "RUN id")
	if err != nil {
		return err
	}
	r, err := c.Run(ctx, arg)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := printJSON(stdout, r); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "run %s (%s): %s\n", printable(r.ID), printable(r.Workflow), printable(r.Status))
		if r.Status == string(store.RunCompleted) {
			fmt.Fprintf(stdout, "result: %s\n", printable(string(orNull(r.Result))))
		}
		if r.Error != "" {
			fmt.Fprintf(stdout, "error: %s\n", printable(r.Error))
		}
		if r.Parent != "" {
			fmt.Fprintf(stdout, "parent: %s\n", printable(r.Parent))
			printParentClose(stdout, r.ParentClose, r.Abandoned)
		}
		printChain(stdout, r.ContinuedFrom, r.ContinuedAs)
		printAttrs(stdout, r.Attributes)
		printReset(stdout, r.ResetFrom, r.ResetKey, r.ResetTo)
		if r.CancelReason != "" && !client.Ended(r.Status) {
			fmt.Fprintf(stdout, "cancel requested: %s\n", printable(r.CancelReason))
		}
		printPause(stdout, r.Paused)
		if r.Worker != "" && r.LeaseExpiry != nil {
			fmt.Fprintf(stdout, "worker: %s (lease until %s)\n", printable(r.Worker), r.LeaseExpiry.Format(time.RFC3339Nano))
		}
		fmt.Fprintf(stdout, "created: %s\nupdated: %s\n", r.CreatedAt.Format(time.RFC3339Nano), r.UpdatedAt.Format(time.RFC3339Nano))
		if !client.Ended(r.Status) {
			v, err := c.Outcomes(ctx, r.ID)
			if err != nil {
				return fmt.Errorf("run %s: reading what it waits on: %w", printable(r.ID), err)
			}
			printWaiting(stdout, v.Waiting, time.Now())
		}
	}
	return runFailure(r.ID, r.Status, "")
}

// inspectRemote is `skein inspect` against a server.
func inspectRemote(ctx context.Context, sf *serverFlags, id string, asJSON bool, stdout io.Writer) error {
	c, err := sf.client()
	if err != nil {
		return err
	}
	v, err := c.Outcomes(ctx, id)
	if err != nil {
		return err
	}
	return printView(localView(v), asJSON, stdout)
}

func cmdWait(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("wait", stderr)
	sf := addServerFlags(fs)
	timeout := fs.Duration("timeout", 0, "give up (exit 1) after this long; 0 waits as long as it takes")
	poll := fs.Duration("poll", 250*time.Millisecond, "how often to ask the server")
	quiet := fs.Bool("quiet", false, "no progress line on stderr")
	asJSON := fs.Bool("json", false, "print the run and its outcomes as JSON instead of the result")
	issued := fs.String("issued", "", "wait only until the run has issued the op at this key (a promise to settle, say), then exit 0")
	follow := fs.Bool("follow", false, "when the run continues as new, wait for its successor, and so on to the end of the chain")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := oneArg(fs, pos, "RUN id"); err != nil {
		return err
	}
	if *poll <= 0 {
		return &exitError{code: exitUsage, err: errors.New("--poll must be positive")}
	}
	c, err := sf.client()
	if err != nil {
		return err
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	p := newProgress(stderr, *quiet)
	start := time.Now()
	v, err := c.Wait(ctx, pos[0], client.WaitOptions{Poll: *poll, Issued: *issued, Follow: *follow,
		Progress: func(id string, v client.OutcomeView, err error) {
			if err != nil { // the server answered before: a restart, retried
				p.show(fmt.Sprintf("run %s: server unreachable, retrying", printable(id)), time.Since(start))
				return
			}
			p.show(waitLine(id, v), time.Since(start))
		}})
	p.done()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &exitError{code: exitFailed, err: fmt.Errorf("run %s is still %s after %v", v.Run, v.Status, *timeout)}
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return err
	case *issued != "" && v.HasKey(*issued):
		return nil
	case *issued != "":
		return &exitError{code: exitFailed, err: fmt.Errorf("run %s ended %s without issuing an op at key %q", v.Run, v.Status, *issued)}
	}
	return printWaited(stdout, stderr, localView(v), *asJSON)
}

// waitLine is skein wait's progress line for run id.
func waitLine(id string, v client.OutcomeView) string {
	pending := 0
	for _, o := range v.Outcomes {
		if o.Status == string(store.OutcomePending) {
			pending++
		}
	}
	line := fmt.Sprintf("run %s: %s, %d outcome", printable(id), printable(v.Status), len(v.Outcomes))
	if len(v.Outcomes) != 1 {
		line += "s"
	}
	if pending > 0 {
		line += fmt.Sprintf(" (%d pending)", pending)
	}
	return line
}

// printWaited prints the run skein wait waited for: as JSON, or its
// result, or where it continued; a run that did not complete is an
// error (runFailure).
func printWaited(stdout, stderr io.Writer, v client.OutcomeView, asJSON bool) error {
	if asJSON {
		if err := printJSON(stdout, v); err != nil {
			return err
		}
	} else if v.Status == string(store.RunCompleted) {
		fmt.Fprintf(stdout, "%s\n", printable(string(orNull(v.Result))))
	} else if v.ContinuedAs != "" {
		fmt.Fprintf(stderr, "run %s continued as new as run %s: wait for it with skein wait %s (or --follow)\n",
			printable(v.Run), printable(v.ContinuedAs), printable(v.ContinuedAs))
	} else if v.ResetTo != "" {
		fmt.Fprintf(stderr, "run %s was reset as run %s: wait for it with skein wait %s\n",
			printable(v.Run), printable(v.ResetTo), printable(v.ResetTo))
	}
	msg := ""
	if v.Error != nil {
		msg = *v.Error
	}
	return runFailure(v.Run, v.Status, msg)
}

// progress is a status line on stderr: rewritten in place on a terminal,
// else printed as a new line whenever it changes.
type progress struct {
	w          io.Writer
	tty, quiet bool
	last       string
	shown      bool
}

func newProgress(w io.Writer, quiet bool) *progress {
	p := &progress{w: w, quiet: quiet}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) show(line string, elapsed time.Duration) {
	if p.quiet {
		return
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K%s [%v]", line, elapsed.Round(100*time.Millisecond))
		p.shown = true
		return
	}
	if line != p.last {
		fmt.Fprintln(p.w, line)
		p.last = line
	}
}

func (p *progress) done() {
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

func cmdResolve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("resolve", stderr)
	sf := addServerFlags(fs)
	value := fs.String("value", "", "settle the promise with this value (JSON)")
	errText := fs.String("error", "", "settle the promise with this error")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := oneArg(fs, pos, "PROMISE id ({run}.{key})"); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var req client.ResolveRequest
	switch {
	case set["value"] && set["error"]:
		return &exitError{code: exitUsage, err: errors.New("give --value or --error, not both")}
	case set["value"]:
		if err := checkJSONFlag("--value", *value); err != nil {
			return err
		}
		req.Value = json.RawMessage(*value)
	case set["error"] && *errText != "":
		req.Error = errText
	default:
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("give --value JSON or --error TEXT")}
	}
	c, err := sf.client()
	if err != nil {
		return err
	}
	res, err := c.Resolve(ctx, pos[0], req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	if res.AlreadySettled {
		fmt.Fprintf(stdout, "promise %s already settled with this outcome (%s): nothing changed\n", printable(res.Promise), printable(res.Status))
		return nil
	}
	fmt.Fprintf(stdout, "promise %s settled (%s)\n", printable(res.Promise), printable(res.Status))
	return nil
}

func cmdCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cancel", stderr)
	sf := addServerFlags(fs)
	reason := fs.String("reason", "", "why (recorded with the run; default \"canceled\")")
	asJSON := fs.Bool("json", false, "print the run as JSON")
	c, arg, err := sf.parse(fs, args, "RUN id")
	if err != nil {
		return err
	}
	r, err := c.Cancel(ctx, arg, *reason)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, r)
	}
	fmt.Fprintf(stdout, "run %s: cancellation requested (now %s)\n", printable(r.ID), printable(r.Status))
	return nil
}
