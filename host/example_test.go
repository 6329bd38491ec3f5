package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// The plugins of examples/embed serve as the workflow modules of these
// examples: plugin(name) returns the bytes of a module built with
//
//	GOOS=wasip1 GOARCH=wasm go build -o greet.wasm ./examples/embed/plugins/greet
//
// greet calls the activity "upper" and builds a greeting in a step;
// review calls "wordcount" and waits for the promise "verdict"; sneaky
// calls "upper" and then "secrets".

// From zero to a finished run: a host on a SQLite file, an activity, a
// deployed module, a worker, a run, its result and its outcomes, and a
// clean shutdown.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "skein-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The store: a SQLite file (":memory:" for a database that keeps nothing).
	st, err := sqlite.Open(ctx, filepath.Join(dir, "skein.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close() // last: after the host

	h, err := host.New(ctx, host.Config{Store: st, CacheDir: cacheDir})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)

	// Activities are plain Go functions; Typed does the JSON.
	h.RegisterActivity("upper", activity.Typed(func(ctx context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	}))

	m, err := h.Deploy(ctx, "greet", plugin("greet"))
	if err != nil {
		log.Fatal(err)
	}

	// The worker executes runs (and fires timers, delivers settlements
	// and cancellations) until its context ends.
	wctx, stopWork := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- h.Work(wctx, host.WorkOptions{}) }()
	defer func() { stopWork(); <-worked }() // first: stop the worker

	r, err := h.Start(ctx, host.StartOptions{Module: m.Name, Workflow: "greet", Input: json.RawMessage(`"ada"`), ID: "greet-1"})
	if err != nil {
		log.Fatal(err)
	}
	r, err = h.Await(ctx, r.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.ID, r.Status, string(r.Result))

	_, outcomes, err := h.Inspect(ctx, r.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range outcomes {
		fmt.Println(o.Key, o.Kind, o.Function, o.Status, string(o.Value))
	}
	// Output:
	// greet-1 completed "hello, ADA"
	// 1 call upper ok "ADA"
	// 2 step greeting ok "hello, ADA"
}

// A host on an in-memory SQLite database, with no worker: Drive executes
// one run in the calling goroutine until it ends or suspends.
func ExampleNew_inMemory() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ":memory:", sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	h, err := host.New(ctx, host.Config{Store: st, CacheDir: cacheDir})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)
	h.RegisterActivity("upper", activity.Typed(func(ctx context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	}))
	m, err := h.Deploy(ctx, "greet", plugin("greet"))
	if err != nil {
		log.Fatal(err)
	}
	r, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: "greet", Input: json.RawMessage(`"grace"`)})
	if err != nil {
		log.Fatal(err)
	}
	r, err = h.Drive(ctx, r.ID, host.DriveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Status, string(r.Result))
	// Output: completed "hello, GRACE"
}

// Each module may call only the activities granted to it. The module
// "sneaky" is granted "upper" but also calls "secrets": its run fails, and
// "secrets" never runs.
func ExampleHost_Grant() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ":memory:", sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	// RequireGrants: a module with no grant may call no activity at all.
	h, err := host.New(ctx, host.Config{Store: st, CacheDir: cacheDir, RequireGrants: true})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)
	h.RegisterActivity("upper", activity.Typed(func(ctx context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	}))
	h.RegisterActivity("secrets", activity.Typed(func(ctx context.Context, name string) (string, error) {
		return "the secret " + name, nil
	}))
	// Grants are kept in the host's memory: make them at startup, like
	// the activities. By name (every version deployed under the name) or
	// by hash (one version).
	h.Grant("sneaky", "upper")

	m, err := h.Deploy(ctx, "sneaky", plugin("sneaky"))
	if err != nil {
		log.Fatal(err)
	}
	r, err := h.Start(ctx, host.StartOptions{Module: "sneaky", Workflow: "sneaky", Input: json.RawMessage(`"eve"`)})
	if err != nil {
		log.Fatal(err)
	}
	r, err = h.Drive(ctx, r.ID, host.DriveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Status)
	fmt.Println(strings.ReplaceAll(r.Error, m.Hash[:12], "HASH"))
	// Output:
	// failed
	// activity "secrets" is not granted to module sneaky (HASH); it may call: upper (called at key "2")
}

// Subscribe delivers run events for logs and user interfaces. The host
// never waits for a subscriber: a full buffer drops events (counted by
// Dropped).
func ExampleHost_Subscribe() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ":memory:", sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	h, err := host.New(ctx, host.Config{Store: st, CacheDir: cacheDir})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)
	h.RegisterActivity("upper", activity.Typed(func(ctx context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	}))
	m, err := h.Deploy(ctx, "greet", plugin("greet"))
	if err != nil {
		log.Fatal(err)
	}

	sub := h.Subscribe(host.SubscribeOptions{RunID: "greet-2"})
	defer sub.Close()
	wctx, stopWork := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- h.Work(wctx, host.WorkOptions{}) }()
	defer func() { stopWork(); <-worked }()

	if _, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: "greet", Input: json.RawMessage(`"ada"`), ID: "greet-2"}); err != nil {
		log.Fatal(err)
	}
	for ev := range sub.C {
		switch ev.Kind {
		case host.EventOpRecorded:
			if ev.Status == store.OutcomePending {
				fmt.Println(ev.Kind, ev.Key, ev.OpKind, ev.Function, ev.Status)
			} else {
				fmt.Println(ev.Kind, ev.Key, ev.OpKind, ev.Function, ev.Status, string(ev.Value)+ev.Error)
			}
		case host.EventCompleted:
			fmt.Println(ev.Kind, string(ev.Result), "dropped:", sub.Dropped())
			return
		case host.EventFailed, host.EventCanceled, host.EventDiverged:
			fmt.Println(ev.Kind, ev.Error)
			return
		default: // started, suspended
			fmt.Println(ev.Kind)
		}
	}
	// Output:
	// started
	// op_recorded 1 call upper pending
	// op_recorded 1 call upper ok "ADA"
	// op_recorded 2 step greeting ok "hello, ADA"
	// completed "hello, ADA" dropped: 0
}

// A workflow waits for an external promise; the embedder settles it by its
// full id "{run}.{key}" once the run waits (here: when the run suspends),
// and the worker resumes the run by replay.
func ExampleHost_Resolve() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ":memory:", sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	h, err := host.New(ctx, host.Config{Store: st, CacheDir: cacheDir})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)
	h.RegisterActivity("wordcount", activity.Typed(func(ctx context.Context, s string) (int, error) {
		return len(strings.Fields(s)), nil
	}))
	if _, err := h.Deploy(ctx, "review", plugin("review")); err != nil {
		log.Fatal(err)
	}
	sub := h.Subscribe(host.SubscribeOptions{RunID: "doc-7"})
	defer sub.Close()
	wctx, stopWork := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- h.Work(wctx, host.WorkOptions{}) }()
	defer func() { stopWork(); <-worked }()

	r, err := h.Start(ctx, host.StartOptions{Module: "review", Workflow: "review", Input: json.RawMessage(`{"doc":"ship it"}`), ID: "doc-7"})
	if err != nil {
		log.Fatal(err)
	}
	for ev := range sub.C {
		if ev.Kind == host.EventSuspended {
			fmt.Println("suspended; settling", r.ID+".verdict")
			break
		}
	}
	if err := h.Resolve(ctx, r.ID+".verdict", json.RawMessage(`"approved"`), ""); err != nil {
		log.Fatal(err)
	}
	r, err = h.Await(ctx, r.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Status, string(r.Result))
	// Output:
	// suspended; settling doc-7.verdict
	// completed "2 words, approved"
}

// Cancel ends a waiting run: its pending promise fails with a
// cancellation error, and the run ends canceled.
func ExampleHost_Cancel() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ":memory:", sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	h, err := host.New(ctx, host.Config{Store: st, CacheDir: cacheDir})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)
	h.RegisterActivity("wordcount", activity.Typed(func(ctx context.Context, s string) (int, error) {
		return len(strings.Fields(s)), nil
	}))
	if _, err := h.Deploy(ctx, "review", plugin("review")); err != nil {
		log.Fatal(err)
	}
	r, err := h.Start(ctx, host.StartOptions{Module: "review", Workflow: "review", Input: json.RawMessage(`{"doc":"draft"}`), ID: "doc-8"})
	if err != nil {
		log.Fatal(err)
	}
	if r, err = h.Drive(ctx, r.ID, host.DriveOptions{}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Status)

	if _, err := h.Cancel(ctx, r.ID, "withdrawn by the author"); err != nil {
		log.Fatal(err)
	}
	// The run is not active in this process: Drive (or a worker) delivers
	// the cancellation.
	if _, err := h.Drive(ctx, r.ID, host.DriveOptions{}); err != nil {
		log.Fatal(err)
	}
	r, err = h.Await(ctx, r.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Status, r.Error)
	// Output:
	// suspended
	// canceled skein: canceled: withdrawn by the author
}
