//go:build !wasip1

// Command embed is a plugin host: a plain Go program (not a workflow
// module) that embeds the skein host. It loads the workflow modules of a
// folder (*.wasm, its plugins), grants each plugin its own set of host
// activities, runs one run of every plugin, settles the promise a plugin
// waits for when it suspends, and prints every run's outcomes.
//
//	for p in greet review sneaky; do
//		GOOS=wasip1 GOARCH=wasm go build -o plugins-wasm/$p.wasm ./examples/embed/plugins/$p
//	done
//	go run ./examples/embed -dir plugins-wasm            # runs in an in-memory database
//	go run ./examples/embed -dir plugins-wasm -db e.db   # a second start prints the stored runs, executes nothing
//
// The plugin "sneaky" calls an activity it is not granted; its run fails.
// docs/embedding.md explains the API this program uses.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store/sqlite"
)

// plugin is what this host decides about a plugin: the activities it may
// call and the input of its run.
type plugin struct {
	grants []string
	input  string
}

// policy grants each known plugin a different set of activities. A plugin
// not listed may call none (Config.RequireGrants) and runs with input null.
var policy = map[string]plugin{
	"greet":  {grants: []string{"upper"}, input: `"ada"`},
	"review": {grants: []string{"wordcount"}, input: `{"doc":"durable workflows compiled to wasm"}`},
	"sneaky": {grants: []string{"upper", "wordcount"}, input: `"eve"`},
}

// verdict is what the program's reviewer answers to a plugin waiting on
// the promise "verdict".
const verdict = `"approved by the editor"`

func main() {
	dir := flag.String("dir", "plugins-wasm", "folder of workflow modules (*.wasm), one plugin each")
	db := flag.String("db", ":memory:", "SQLite file for modules, runs and outcomes (:memory: keeps nothing)")
	idle := flag.Bool("idle", false, "after the runs, stay up (idle, the worker still running) until interrupted")
	quiet := flag.Bool("quiet", false, "do not print run events on stderr")
	cacheDir := flag.String("cache-dir", "", "keep compiled modules in this folder across restarts")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	events := io.Writer(os.Stderr)
	if *quiet {
		events = io.Discard
	}
	if err := run(ctx, options{dir: *dir, db: *db, cacheDir: *cacheDir, idle: *idle}, os.Stdout, events); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

type options struct {
	dir, db, cacheDir string
	idle              bool
}

func run(ctx context.Context, o options, stdout, events io.Writer) (err error) {
	// 1. A store and a host. The host is pure Go: no cgo, one binary.
	st, err := sqlite.Open(ctx, o.db, sqlite.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	h, err := host.New(ctx, host.Config{Store: st, CacheDir: o.cacheDir, RequireGrants: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.Close(context.Background())) }()

	// 2. The activities this host offers, as plain typed Go functions.
	h.RegisterActivity("upper", activity.Typed(func(_ context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	}))
	h.RegisterActivity("wordcount", activity.Typed(func(_ context.Context, s string) (int, error) {
		return len(strings.Fields(s)), nil
	}))
	h.RegisterActivity("secrets", activity.Typed(func(_ context.Context, name string) (string, error) {
		return "s3cr3t-" + name, nil
	}))

	// 3. Events: log them, and answer a plugin that waits for a verdict.
	sub := h.Subscribe(host.SubscribeOptions{})
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		for ev := range sub.C {
			logEvent(events, ev)
			if ev.Kind == host.EventSuspended {
				err := h.Resolve(ctx, ev.RunID+".verdict", json.RawMessage(verdict), "")
				if err != nil && !errors.Is(err, host.ErrNotFound) && !errors.Is(err, host.ErrConflict) {
					fmt.Fprintf(events, "settle %s.verdict: %v\n", ev.RunID, err)
				}
			}
		}
	}()
	defer func() { sub.Close(); <-logged }()

	// 4. A worker executes the runs in the background.
	wctx, stopWork := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- h.Work(wctx, host.WorkOptions{}) }()
	defer func() { stopWork(); err = errors.Join(err, <-worked) }()

	// 5. Load the plugins: deploy each module, grant it its activities,
	// start one run of each of its workflows.
	files, err := filepath.Glob(filepath.Join(o.dir, "*.wasm"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no *.wasm modules in %s", o.dir)
	}
	slices.Sort(files)
	type started struct {
		name, hash string
		runs       []string
	}
	var plugins []started
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(filepath.Base(f), ".wasm")
		m, err := h.Deploy(ctx, name, wasm)
		if err != nil {
			return err
		}
		p := policy[name]
		h.Grant(m.Hash, p.grants...)
		ps := started{name: name, hash: m.Hash}
		for _, wf := range m.Workflows {
			// The id names the module version: starting it again (a
			// second start of this program on the same database)
			// returns the stored run.
			r, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: wf, Input: json.RawMessage(p.input),
				ID: fmt.Sprintf("%s-%s", wf, m.Hash[:8])})
			if err != nil {
				return err
			}
			ps.runs = append(ps.runs, r.ID)
		}
		plugins = append(plugins, ps)
	}

	// 6. Wait for every run and print its outcomes.
	for _, p := range plugins {
		granted, _ := h.Grants(p.hash)
		fmt.Fprintf(stdout, "plugin %s (%s) may call: %s\n", p.name, p.hash[:12], strings.Join(granted, ", "))
		for _, id := range p.runs {
			r, err := h.Await(ctx, id)
			if err != nil {
				return err
			}
			switch {
			case len(r.Result) > 0 && r.Error == "":
				fmt.Fprintf(stdout, "  run %s: %s %s\n", r.ID, r.Status, r.Result)
			default:
				fmt.Fprintf(stdout, "  run %s: %s: %s\n", r.ID, r.Status, r.Error)
			}
			_, outs, err := h.Inspect(ctx, id)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			for _, oc := range outs {
				v := string(oc.Value)
				if oc.Error != "" {
					v = oc.Error
				}
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\n", oc.Key, oc.Kind, oc.Function, oc.Status, v)
			}
			tw.Flush()
		}
	}
	if o.idle {
		// Hand what compiling the modules allocated back to the OS now,
		// not at the next collection (an idle program may run none for
		// two minutes).
		debug.FreeOSMemory()
		fmt.Fprintf(stdout, "idle: %d plugins deployed; interrupt to stop\n", len(plugins))
		<-ctx.Done()
	}
	return nil
}

func logEvent(w io.Writer, ev host.Event) {
	switch ev.Kind {
	case host.EventStarted:
		fmt.Fprintf(w, "event %s: started (replay %t)\n", ev.RunID, ev.Replay)
	case host.EventOpRecorded:
		fmt.Fprintf(w, "event %s: op %s %s %s %s\n", ev.RunID, ev.Key, ev.OpKind, ev.Function, ev.Status)
	default:
		fmt.Fprintf(w, "event %s: %s %s%s\n", ev.RunID, ev.Kind, ev.Result, ev.Error)
	}
}
