package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// cacheDir keeps compiled modules across test processes (as
// internal/testing/hosttest does), so each example does not compile its module.
var cacheDir = testcache.Shared()

var (
	pluginsMu sync.Mutex
	plugins   = map[string][]byte{}
)

// plugin returns the wasm bytes of examples/embed/plugins/NAME, built
// once per test process.
func plugin(name string) []byte {
	pluginsMu.Lock()
	defer pluginsMu.Unlock()
	if b, ok := plugins[name]; ok {
		return b
	}
	p, err := wasmbuild.BuildErr("./examples/embed/plugins/" + name)
	if err != nil {
		panic(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		panic(err)
	}
	plugins[name] = b
	return b
}

// env is a host on a fresh SQLite file with the embed example's
// activities registered; upper and secrets count their calls.
type env struct {
	t       *testing.T
	h       *host.Host
	st      store.Store
	secrets atomic.Int32
}

func newEnv(t *testing.T, cfg host.Config) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Store, cfg.CacheDir = st, cacheDir
	cfg.Engine = os.Getenv("SKEIN_TEST_ENGINE") // make test-wasmtime
	h, err := host.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(ctx) })
	e := &env{t: t, h: h, st: st}
	h.RegisterActivity("upper", activity.Typed(func(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil }))
	h.RegisterActivity("wordcount", activity.Typed(func(_ context.Context, s string) (int, error) { return len(strings.Fields(s)), nil }))
	h.RegisterActivity("secrets", activity.Typed(func(_ context.Context, s string) (string, error) {
		e.secrets.Add(1)
		return "s3cr3t", nil
	}))
	return e
}

func (e *env) deploy(name string) store.Module {
	e.t.Helper()
	m, err := e.h.Deploy(context.Background(), name, plugin(name))
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) start(module, workflow, input string) store.Run {
	e.t.Helper()
	r, err := e.h.Start(context.Background(), host.StartOptions{Module: module, Workflow: workflow, Input: json.RawMessage(input)})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// work runs the worker until the test ends.
func (e *env) work() {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.h.Work(ctx, host.WorkOptions{Grace: time.Second}) }()
	e.t.Cleanup(func() { stop(); <-done })
}

func (e *env) await(id string) store.Run {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := e.h.Await(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// A module calling an activity it is not granted fails its run with an
// error that names the activity and the module (name and short hash); the
// activity never runs.
func TestGrantDenied(t *testing.T) {
	e := newEnv(t, host.Config{})
	m := e.deploy("sneaky")
	e.h.Grant("sneaky", "upper")
	e.work()
	r := e.await(e.start("sneaky", "sneaky", `"eve"`).ID)
	want := `activity "secrets" is not granted to module sneaky (` + m.Hash[:12] + `); it may call: upper (called at key "2")`
	if r.Status != store.RunFailed || r.Error != want {
		t.Fatalf("run %s: %q\nwant failed: %q", r.Status, r.Error, want)
	}
	if n := e.secrets.Load(); n != 0 {
		t.Fatalf("the ungranted activity ran %d times", n)
	}
	_, outs, err := e.h.Inspect(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Key != "1" || outs[0].Function != "upper" || outs[0].Status != store.OutcomeOK {
		t.Fatalf("outcomes %+v, want only the granted call at key 1", outs)
	}
}

// A grant by hash takes precedence over one by name; with RequireGrants a
// module without a grant may call nothing; without it, anything.
func TestGrantRules(t *testing.T) {
	t.Run("hash over name", func(t *testing.T) {
		e := newEnv(t, host.Config{})
		m := e.deploy("greet")
		e.h.Grant("greet", "upper")
		e.h.Grant(m.Hash)
		r, err := e.h.Drive(context.Background(), e.start(m.Hash, "greet", `"ada"`).ID, host.DriveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := `activity "upper" is not granted to module greet (` + m.Hash[:12] + `); it may call no activity (called at key "1")`
		if r.Status != store.RunFailed || r.Error != want {
			t.Fatalf("run %s: %q\nwant failed: %q", r.Status, r.Error, want)
		}
		if got, ok := e.h.Grants(m.Hash); !ok || len(got) != 0 {
			t.Fatalf("Grants(hash) = %q, %t", got, ok)
		}
	})
	t.Run("require grants", func(t *testing.T) {
		e := newEnv(t, host.Config{RequireGrants: true})
		m := e.deploy("greet")
		r, err := e.h.Drive(context.Background(), e.start(m.Hash, "greet", `"ada"`).ID, host.DriveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != store.RunFailed || !strings.Contains(r.Error, `activity "upper" is not granted to module greet (`+m.Hash[:12]+`); it may call no activity`) {
			t.Fatalf("run %s: %q", r.Status, r.Error)
		}
		e.h.Grant("greet", "upper")
		r, err = e.h.Drive(context.Background(), e.start(m.Hash, "greet", `"bob"`).ID, host.DriveOptions{})
		if err != nil || r.Status != store.RunCompleted || string(r.Result) != `"hello, BOB"` {
			t.Fatalf("granted: run %s %s %q, %v", r.Status, r.Result, r.Error, err)
		}
	})
	t.Run("a grant to any name of the module", func(t *testing.T) {
		e := newEnv(t, host.Config{RequireGrants: true})
		m := e.deploy("greet")
		e.h.Grant("greet", "upper")
		if _, err := e.h.Deploy(context.Background(), "greet-canary", plugin("greet")); err != nil { // the same bytes, a second name
			t.Fatal(err)
		}
		r, err := e.h.Drive(context.Background(), e.start(m.Hash, "greet", `"cy"`).ID, host.DriveOptions{})
		if err != nil || r.Status != store.RunCompleted || string(r.Result) != `"hello, CY"` {
			t.Fatalf("a module granted by its first name, deployed again under a second: run %s %s %q, %v", r.Status, r.Result, r.Error, err)
		}
		// Another module under greet: the runs of the first keep its grant.
		if _, err := e.h.Deploy(context.Background(), "greet", plugin("sneaky")); err != nil {
			t.Fatal(err)
		}
		r, err = e.h.Drive(context.Background(), e.start(m.Hash, "greet", `"di"`).ID, host.DriveOptions{})
		if err != nil || r.Status != store.RunCompleted || string(r.Result) != `"hello, DI"` {
			t.Fatalf("the first module after greet moved to another: run %s %s %q, %v", r.Status, r.Result, r.Error, err)
		}
	})
	t.Run("no grant, no restriction", func(t *testing.T) {
		e := newEnv(t, host.Config{})
		e.h.Grant("another-module", "wordcount")
		m := e.deploy("sneaky")
		r, err := e.h.Drive(context.Background(), e.start(m.Hash, "sneaky", `"eve"`).ID, host.DriveOptions{})
		if err != nil || r.Status != store.RunCompleted || string(r.Result) != `"EVE:s3cr3t"` {
			t.Fatalf("run %s %s %q, %v", r.Status, r.Result, r.Error, err)
		}
	})
}

// Await returns when the run ends, driven by Work, by a Drive call, or by
// another host on the same store; it ends with its context, and fails for
// an unknown run.
func TestAwait(t *testing.T) {
	ctx := context.Background()
	t.Run("drive", func(t *testing.T) {
		e := newEnv(t, host.Config{})
		m := e.deploy("greet")
		r := e.start(m.Hash, "greet", `"ada"`)
		got := make(chan store.Run, 1)
		go func() { got <- e.await(r.ID) }()
		time.Sleep(50 * time.Millisecond) // Await is waiting before the run starts
		if _, err := e.h.Drive(ctx, r.ID, host.DriveOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-got:
			if a.Status != store.RunCompleted || string(a.Result) != `"hello, ADA"` {
				t.Fatalf("Await: %s %s", a.Status, a.Result)
			}
		case <-time.After(500 * time.Millisecond):
			t.Fatal("Await did not return within 500ms of the run's end")
		}
		// An ended run returns at once.
		if a := e.await(r.ID); a.Status != store.RunCompleted {
			t.Fatalf("Await again: %s", a.Status)
		}
	})
	t.Run("context and unknown run", func(t *testing.T) {
		e := newEnv(t, host.Config{})
		m := e.deploy("review")
		r := e.start(m.Hash, "review", `{"doc":"a b"}`)
		if d, err := e.h.Drive(ctx, r.ID, host.DriveOptions{}); err != nil || d.Status != store.RunSuspended {
			t.Fatalf("drive: %s, %v", d.Status, err)
		}
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		a, err := e.h.Await(tctx, r.ID)
		if !errors.Is(err, context.DeadlineExceeded) || a.Status != store.RunSuspended {
			t.Fatalf("Await: %s, %v; want the suspended run and a deadline error", a.Status, err)
		}
		if _, err := e.h.Await(ctx, "no-such-run"); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("Await(unknown): %v", err)
		}
	})
	t.Run("another host", func(t *testing.T) {
		e := newEnv(t, host.Config{})
		m := e.deploy("greet")
		other, err := host.New(ctx, host.Config{Store: e.st, CacheDir: cacheDir, Engine: os.Getenv("SKEIN_TEST_ENGINE")})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close(ctx)
		r := e.start(m.Hash, "greet", `"ada"`)
		got := make(chan error, 1)
		go func() {
			tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			a, err := other.Await(tctx, r.ID)
			if err == nil && a.Status != store.RunCompleted {
				err = errors.New("status " + string(a.Status))
			}
			got <- err
		}()
		if _, err := e.h.Drive(ctx, r.ID, host.DriveOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("Await on the other host: %v", err)
		}
	})
}

// The events of a run that suspends on a promise and is resumed by a
// settlement, in order.
func TestEvents(t *testing.T) {
	e := newEnv(t, host.Config{})
	m := e.deploy("review")
	sub := e.h.Subscribe(host.SubscribeOptions{})
	defer sub.Close()
	e.work()
	r := e.start(m.Hash, "review", `{"doc":"one two three"}`)
	var got []string
	deadline := time.After(20 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-sub.C:
			if ev.RunID != r.ID || ev.Workflow != "review" || ev.Module != m.Hash || ev.Time.IsZero() {
				t.Fatalf("event %+v", ev)
			}
			s := string(ev.Kind)
			switch ev.Kind {
			case host.EventStarted:
				if ev.Replay {
					s += " replay"
				}
			case host.EventOpRecorded:
				s += " " + ev.Key + " " + ev.OpKind + " " + ev.Function + " " + string(ev.Status) + " " + string(ev.Value)
			case host.EventSuspended:
				if err := e.h.Resolve(context.Background(), r.ID+".verdict", json.RawMessage(`"ok"`), ""); err != nil {
					t.Fatal(err)
				}
			case host.EventCompleted:
				s += " " + string(ev.Result)
				done = true
			default:
				t.Fatalf("event %+v", ev)
			}
			got = append(got, s)
		case <-deadline:
			t.Fatalf("no end within 20s; events: %q", got)
		}
	}
	want := []string{
		"started",
		"op_recorded 1 call wordcount pending ",
		"op_recorded 1 call wordcount ok 3",
		"op_recorded verdict promise promise pending ",
		"suspended",
		"started replay",
		"op_recorded verdict promise promise ok \"ok\"",
		"completed \"3 words, ok\"",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if sub.Dropped() != 0 {
		t.Fatalf("dropped %d", sub.Dropped())
	}
}

// A subscriber that never reads loses events but does not stall the run;
// a closed subscription's channel is closed.
func TestSlowSubscriber(t *testing.T) {
	e := newEnv(t, host.Config{})
	m := e.deploy("greet")
	slow := e.h.Subscribe(host.SubscribeOptions{Buffer: 1})
	other := e.h.Subscribe(host.SubscribeOptions{RunID: "not-this-run"})
	r, err := e.h.Drive(context.Background(), e.start(m.Hash, "greet", `"ada"`).ID, host.DriveOptions{})
	if err != nil || r.Status != store.RunCompleted {
		t.Fatalf("run %s, %v", r.Status, err)
	}
	if len(slow.C) != 1 || slow.Dropped() != 4 {
		t.Fatalf("slow subscriber: %d queued, %d dropped; want 1 and 4 (5 events)", len(slow.C), slow.Dropped())
	}
	if len(other.C) != 0 || other.Dropped() != 0 {
		t.Fatalf("a subscription to another run got %d events", len(other.C)+int(other.Dropped()))
	}
	slow.Close()
	slow.Close()
	other.Close()
	for range slow.C {
	}
}
