package main

// skein schedule and skein hook: client commands for schedules and
// webhooks (docs/schedules.md).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
)

// subcommand splits "VERB [args]" off a command's arguments.
func subcommand(name string, args []string, verbs string) (string, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			return "help", nil, nil
		}
		return "", nil, &exitError{code: exitUsage, err: fmt.Errorf("want a subcommand: %s\n%s", verbs, usageHint(name))}
	}
	return args[0], args[1:], nil
}

func cmdSchedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verb, rest, err := subcommand("schedule", args, "create, list, pause, resume, delete or trigger")
	if err != nil {
		return err
	}
	switch verb {
	case "help":
		newFlagSet("schedule", stderr).Usage()
		return flag.ErrHelp
	case "create":
		return scheduleCreate(ctx, rest, stdout, stderr)
	case "list":
		return scheduleList(ctx, rest, stdout, stderr)
	case "pause", "resume", "trigger", "delete":
		return scheduleAct(ctx, verb, rest, stdout, stderr)
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown subcommand %q: want create, list, pause, resume, delete or trigger", verb)}
}

func scheduleCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedule", stderr)
	sf := addServerFlags(fs)
	expr := fs.String("cron", "", "cron expression: 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or @daily, @hourly, @every 1h")
	module := fs.String("module", "", "deployed module (name or hash); a name starts its newest module at each slot")
	workflow := fs.String("workflow", "", "workflow to start (default: the module's only workflow)")
	input := fs.String("input", "null", "workflow input as JSON")
	overlap := fs.String("overlap", "skip", "a slot that comes while the previous run is unfinished: skip, buffer-one or allow")
	catchup := fs.Duration("catchup", 0, "how late a slot may still start after downtime; older slots are skipped and counted (default 1m)")
	tz := fs.String("timezone", "", "IANA time zone the cron expression is read in (default UTC)")
	asJSON := fs.Bool("json", false, "print the schedule as JSON")
	c, name, err := sf.parse(fs, args, "schedule NAME")
	if err != nil {
		return err
	}
	if *expr == "" || *module == "" {
		return &exitError{code: exitUsage, err: fmt.Errorf("--cron and --module are required\n%s", usageHint("schedule"))}
	}
	if err := checkJSONFlag("--input", *input); err != nil {
		return err
	}
	if *catchup < 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--catchup %v is negative", *catchup)}
	}
	req := client.ScheduleRequest{Name: name, Cron: *expr, Timezone: *tz, Module: *module, Workflow: *workflow,
		Input: json.RawMessage(*input), Overlap: *overlap}
	if *catchup > 0 {
		req.Catchup = catchup.String()
	}
	s, err := c.CreateSchedule(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, s)
	}
	fmt.Fprintf(stdout, "schedule %s created (workflow %s of %s, %s %s)\n", printable(s.Name), printable(s.Workflow), printable(s.Module), printable(s.Cron), printable(s.Timezone))
	printNext(stdout, s)
	return nil
}

func printNext(w io.Writer, s client.Schedule) {
	if len(s.Next) > 0 {
		next := make([]string, len(s.Next))
		for i, t := range s.Next {
			next[i] = t.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "next: %s\n", strings.Join(next, ", "))
	}
}

func scheduleList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedule", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the schedules as JSON")
	c, err := sf.parseNone(fs, args, "schedule list")
	if err != nil {
		return err
	}
	ss, err := c.Schedules(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, client.ScheduleList{Schedules: ss})
	}
	if len(ss) == 0 {
		fmt.Fprintln(stdout, "no schedules")
	}
	for _, s := range ss {
		state := "active"
		if s.Paused {
			state = "paused"
		}
		fmt.Fprintf(stdout, "%s  %s %s  %s/%s  %s  fired %d, missed %d, overlapped %d\n", printable(s.Name), printable(s.Cron), printable(s.Timezone),
			printable(s.Module), printable(s.Workflow), state, s.Fired, s.Missed, s.Overlapped)
		if s.LastRun != "" {
			fmt.Fprintf(stdout, "  last run: %s (%s)\n", printable(s.LastRun), printable(s.LastStatus))
		}
		if len(s.Next) > 0 {
			fmt.Fprintf(stdout, "  next: %s\n", s.Next[0].Format(time.RFC3339))
		}
	}
	return nil
}

func scheduleAct(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedule", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	c, name, err := sf.parse(fs, args, "schedule NAME")
	if err != nil {
		return err
	}
	switch verb {
	case "delete":
		if err := c.DeleteSchedule(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "schedule %s deleted (its runs stay)\n", printable(name))
		return nil
	case "trigger":
		r, err := c.TriggerSchedule(ctx, name)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, r)
		}
		fmt.Fprintf(stdout, "run %s started (workflow %s)\n", printable(r.ID), printable(r.Workflow))
		return nil
	}
	edit := c.PauseSchedule
	if verb == "resume" {
		edit = c.ResumeSchedule
	}
	s, err := edit(ctx, name)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, s)
	}
	fmt.Fprintf(stdout, "schedule %s %sd\n", printable(s.Name), verb)
	printNext(stdout, s)
	return nil
}

func cmdHook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verb, rest, err := subcommand("hook", args, "create, list or delete")
	if err != nil {
		return err
	}
	fs := newFlagSet("hook", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	switch verb {
	case "help":
		fs.Usage()
		return flag.ErrHelp
	case "create":
		return hookCreate(ctx, fs, sf, rest, asJSON, stdout)
	case "delete":
		c, name, err := sf.parse(fs, rest, "hook NAME")
		if err != nil {
			return err
		}
		if err := c.DeleteHook(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "hook %s deleted (its runs stay)\n", printable(name))
		return nil
	case "list":
		c, err := sf.parseNone(fs, rest, "hook list")
		if err != nil {
			return err
		}
		hs, err := c.Hooks(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, client.HookList{Hooks: hs})
		}
		if len(hs) == 0 {
			fmt.Fprintln(stdout, "no hooks")
		}
		for _, h := range hs {
			fmt.Fprintf(stdout, "%s  POST %s  %s/%s  %s\n", printable(h.Name), printable(h.URL), printable(h.Module), printable(h.Workflow), printable(hookSigning(h)))
		}
		return nil
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown subcommand %q: want create, list or delete", verb)}
}

// hookCreate is `skein hook create NAME`; fs holds the flags common to
// the hook subcommands (asJSON's among them, already defined).
func hookCreate(ctx context.Context, fs *flag.FlagSet, sf *serverFlags, args []string, asJSON *bool, stdout io.Writer) error {
	module := fs.String("module", "", "deployed module (name or hash); a name starts the module it points at")
	workflow := fs.String("workflow", "", "workflow to start (default: the module's only workflow)")
	secretEnv := fs.String("secret-env", "", "environment variable of the server, named SKEIN_HOOK_*, that holds the HMAC secret deliveries are signed with")
	secret := fs.String("secret", "", "name of the HMAC secret in the server's hook secrets file (skein serve --hook-secrets FILE)")
	scheme := fs.String("scheme", "", "how deliveries are signed: github (X-Hub-Signature-256, the default) or timestamped (Skein-Signature: t=UNIX,v1=HEX; bounds replays)")
	tolerance := fs.Duration("tolerance", 0, "timestamped: how far a delivery's t may be from the server's clock (default 5m)")
	var keep []string
	fs.Func("keep-header", "keep this credential-looking request header in the run's input (repeatable; docs/schedules.md)", func(v string) error {
		keep = append(keep, v)
		return nil
	})
	c, name, err := sf.parse(fs, args, "hook NAME")
	if err != nil {
		return err
	}
	if *module == "" {
		return &exitError{code: exitUsage, err: fmt.Errorf("--module is required\n%s", usageHint("hook"))}
	}
	if *tolerance < 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--tolerance %v is negative", *tolerance)}
	}
	req := client.HookRequest{Name: name, Module: *module, Workflow: *workflow, SecretEnv: *secretEnv, Secret: *secret, Scheme: *scheme, KeepHeaders: keep}
	if *tolerance > 0 {
		req.Tolerance = tolerance.String()
	}
	h, err := c.CreateHook(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, h)
	}
	fmt.Fprintf(stdout, "hook %s created: POST %s starts workflow %s of %s (%s)\n", printable(h.Name), printable(h.URL), printable(h.Workflow), printable(h.Module), printable(hookSigning(h)))
	return nil
}

// hookSigning says how a hook's deliveries are signed.
func hookSigning(h client.Hook) string {
	where := "$" + h.SecretEnv
	switch {
	case h.Secret != "":
		where = "secret " + h.Secret
	case h.SecretEnv == "":
		return "unsigned"
	}
	if h.Tolerance != "" {
		return fmt.Sprintf("signed %s, %s, tolerance %s", h.Scheme, where, h.Tolerance)
	}
	return fmt.Sprintf("signed %s, %s", h.Scheme, where)
}
