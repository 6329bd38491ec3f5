package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host/internal/tracing"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// The traces of runs (docs/observability.md), through the SDK's
// in-memory exporter: the tree of spans of examples/race and
// examples/order, what a replay emits, a run resumed by another process,
// and a traceparent given to Start.

// newTraceProvider is a TracerProvider that keeps every span it ends.
func newTraceProvider() (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(TraceIDGenerator())), exp
}

// spanAttr is the value of span s's attribute k, as text ("" if none).
func spanAttr(s tracetest.SpanStub, k string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == k {
			return a.Value.String()
		}
	}
	return ""
}

// spansNamed returns the spans whose name starts with prefix.
func spansNamed(spans tracetest.SpanStubs, prefix string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// oneSpan returns the one span named name.
func oneSpan(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var got []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			got = append(got, s)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans: %s", len(got), name, spanNames(spans))
	}
	return got[0]
}

func spanNames(spans tracetest.SpanStubs) string {
	var ns []string
	for _, s := range spans {
		ns = append(ns, fmt.Sprintf("%s[%s]", s.Name, spanAttr(s, tracing.AttrKey)))
	}
	return strings.Join(ns, " ")
}

// opSpans returns the op spans of run (those with a key and no attempt
// name), by key; a key with two spans fails the test.
func opSpans(t *testing.T, spans tracetest.SpanStubs, run string) map[string]tracetest.SpanStub {
	t.Helper()
	out := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		k := spanAttr(s, tracing.AttrKey)
		if k == "" || strings.HasPrefix(s.Name, "attempt ") || spanAttr(s, tracing.AttrRunID) != run {
			continue
		}
		if _, dup := out[k]; dup {
			t.Errorf("run %s: two spans of op %s (%s)", run, k, s.Name)
		}
		out[k] = s
	}
	return out
}

// checkChild fails the test unless child is a child of parent.
func checkChild(t *testing.T, child, parent tracetest.SpanStub) {
	t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() || child.SpanContext.TraceID() != parent.SpanContext.TraceID() {
		t.Errorf("span %q (%s) has parent %s in trace %s; want %q (%s) in trace %s", child.Name, spanAttr(child, tracing.AttrKey),
			child.Parent.SpanID(), child.SpanContext.TraceID(), parent.Name, parent.SpanContext.SpanID(), parent.SpanContext.TraceID())
	}
}

// TestTraceRace: examples/race gives a run span (a root), its executions
// and one span per op as its children, named and with their attributes;
// with eviction at every wait the run replays several times and still
// emits each op once, the timer's span from its real start.
func TestTraceRace(t *testing.T) {
	for _, evict := range []Evict{EvictNever, EvictAlways} {
		t.Run(string(evict), func(t *testing.T) {
			tp, exp := newTraceProvider()
			h := newTestHost(t, Config{Evict: evict, TracerProvider: tp})
			m := h.deploy(t, "./examples/race")
			r := h.runToEnd(t, m, "race", "null", "race-"+string(evict))
			if r.Status != store.RunCompleted {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			spans := exp.GetSpans()
			run := oneSpan(t, spans, "run race")
			if run.Parent.IsValid() || spanAttr(run, tracing.AttrRunID) != r.ID || spanAttr(run, tracing.AttrStatus) != "completed" ||
				spanAttr(run, tracing.AttrFunction) != "race" || !run.StartTime.Equal(r.CreatedAt) {
				t.Errorf("run span: parent %v, attributes %v, start %v; want a root of run %s, completed, from %v", run.Parent.SpanID(), run.Attributes, run.StartTime, r.ID, r.CreatedAt)
			}
			execs := spansNamed(spans, "execution race")
			if want := h.c.execs[r.ID]; len(execs) != want || evict == EvictAlways && want < 2 {
				t.Errorf("%d execution spans for %d executions", len(execs), want)
			}
			for _, x := range execs {
				checkChild(t, x, run)
				if spanAttr(x, tracing.AttrWorker) != h.owner {
					t.Errorf("execution span: worker %q, want %q", spanAttr(x, tracing.AttrWorker), h.owner)
				}
			}
			ops := opSpans(t, spans, r.ID)
			want := map[string]string{"1": "sleep", "t2.1": "step slow", "t2.2": "step mark", "t3.1": "step fast", "t3.2": "step mark"}
			if len(ops) != len(want) {
				t.Errorf("op spans %s; want one per key of %v", spanNames(spans), want)
			}
			for k, name := range want {
				s := ops[k]
				if s.Name != name || spanAttr(s, tracing.AttrRunID) != r.ID || spanAttr(s, tracing.AttrWorker) != h.owner {
					t.Errorf("op %s: span %q, attributes %v; want %q of run %s by %s", k, s.Name, s.Attributes, name, r.ID, h.owner)
				}
				checkChild(t, s, run)
			}
			// The timer's deadline is on the run's virtual clock, a little
			// behind the wall clock: its span lasts about 200ms, not 0.
			if d := ops["1"].EndTime.Sub(ops["1"].StartTime); d < 100*time.Millisecond {
				t.Errorf("the 200ms timer's span lasts %s: it does not start when the timer was set", d)
			}
		})
	}
}

// TestTraceOrder: examples/order with its activities served in this
// process: each call op's span has a span per attempt as its children
// (the failed one with an error status), each attempt's context and
// activity.Info carry its span, and the HTTP activity's request carries
// it as a traceparent header.
func TestTraceOrder(t *testing.T) {
	tp, exp := newTraceProvider()
	var mu sync.Mutex
	seen := map[string][]string{} // function and attempt -> Info.Traceparent, the context's span
	note := func(ctx context.Context) {
		i, _ := activity.InfoFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		seen[fmt.Sprintf("%s %d", i.Name, i.Attempt)] = []string{i.Traceparent, tracing.Format(trace.SpanContextFromContext(ctx))}
	}
	var hook string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hook = r.Header.Get("traceparent")
		mu.Unlock()
	}))
	defer srv.Close()
	h := newTestHost(t, Config{TracerProvider: tp, HTTPAllow: []string{strings.TrimPrefix(srv.URL, "http://")}})
	h.RegisterActivity("reserve-stock", func(ctx context.Context, _ []byte) ([]byte, error) {
		note(ctx)
		return []byte(`{"id":"res-1"}`), nil
	})
	h.RegisterActivity("charge", func(ctx context.Context, _ []byte) ([]byte, error) {
		note(ctx)
		if i, _ := activity.InfoFrom(ctx); i.Attempt == 1 {
			return nil, errors.New("card flaky")
		}
		return []byte(`{"id":"rcpt-1"}`), nil
	})
	m := h.deploy(t, "./examples/order")
	r := h.runToEnd(t, m, "order", `{"id":"o-1","item":"book","qty":1,"card":"flaky","notify":"`+srv.URL+`/orders"}`, "o-1")
	if r.Status != store.RunCompleted {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	spans := exp.GetSpans()
	run := oneSpan(t, spans, "run order")
	ops := opSpans(t, spans, r.ID)
	for k, name := range map[string]string{"1": "call reserve-stock", "2": "call charge", "3": "call skein.http"} {
		if ops[k].Name != name {
			t.Errorf("op %s: span %q, want %q", k, ops[k].Name, name)
		}
		checkChild(t, ops[k], run)
	}
	if a := spanAttr(ops["2"], tracing.AttrAttempt); a != "2" {
		t.Errorf("charge's op span: attempt %q, want 2", a)
	}
	mu.Lock()
	defer mu.Unlock()
	attempts := spansNamed(spans, "attempt ")
	want := []string{"reserve-stock 1", "charge 1", "charge 2", "skein.http 1"}
	var got []string
	for _, a := range attempts {
		fn, n := spanAttr(a, tracing.AttrFunction), spanAttr(a, tracing.AttrAttempt)
		got = append(got, fn+" "+n)
		checkChild(t, a, ops[spanAttr(a, tracing.AttrKey)])
		if spanAttr(a, tracing.AttrWorker) != h.owner || spanAttr(a, tracing.AttrRunID) != r.ID {
			t.Errorf("attempt %s %s: attributes %v", fn, n, a.Attributes)
		}
		if failed := a.Status.Code == codes.Error; failed != (fn == "charge" && n == "1") {
			t.Errorf("attempt %s %s: status %v %q", fn, n, a.Status.Code, a.Status.Description)
		}
		atp := tracing.Format(a.SpanContext)
		if fn == "skein.http" {
			if hook != atp {
				t.Errorf("the HTTP request's traceparent %q, want its attempt's %q", hook, atp)
			}
			continue
		}
		if s := seen[fn+" "+n]; len(s) != 2 || s[0] != atp || s[1] != atp {
			t.Errorf("attempt %s %s: the activity saw traceparent and span %q, want %q", fn, n, s, atp)
		}
	}
	if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("attempt spans %q, want %q", got, want)
	}
}

// TestTraceAcrossProcesses: a run started under a traceparent suspends
// in one host and is resumed, after a restart, by another on the same
// store. The second replays the op the first settled and emits no span
// for it; every op span, from either host, is a child of the run span
// the second emits when the run ends, which is the traceparent's child;
// an op issued by the first and settled by the second starts when it
// was issued.
func TestTraceAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	open := func(tp trace.TracerProvider) *testHost {
		h, err := newHost(ctx, Config{Store: st, CacheDir: cacheDir, TracerProvider: tp}, withTestDefaults(testHooks{}))
		if err != nil {
			t.Fatal(err)
		}
		return &testHost{Host: h, st: st, c: &counters{bodies: map[string]int{}, execs: map[string]int{}}}
	}
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	tp1, exp1 := newTraceProvider()
	h1 := open(tp1)
	m := h1.deploy(t, "./examples/approval")
	if _, err := h1.Start(ctx, StartOptions{Module: m.Hash, Workflow: "approval", Input: json.RawMessage(`{"request":"r"}`), ID: "ap", Traceparent: "00-zz"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `traceparent "00-zz"`) {
		t.Errorf("start with a bad traceparent: %v", err)
	}
	r, err := h1.Start(ctx, StartOptions{Module: m.Hash, Workflow: "approval", Input: json.RawMessage(`{"request":"r"}`), ID: "ap", Traceparent: parent})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = h1.Drive(ctx, r.ID, DriveOptions{}); err != nil || r.Status != store.RunSuspended {
		t.Fatalf("first drive: %s, %v", r.Status, err)
	}
	h1.Close(ctx)
	tp2, exp2 := newTraceProvider()
	h2 := open(tp2)
	defer h2.Close(ctx)
	if err := h2.Resolve(ctx, "ap.decision", json.RawMessage(`{"approved":true,"by":"ann"}`), ""); err != nil {
		t.Fatal(err)
	}
	if r, err = h2.Drive(ctx, r.ID, DriveOptions{}); err != nil || r.Status != store.RunCompleted {
		t.Fatalf("second drive: %s %s, %v", r.Status, r.Error, err)
	}
	first, second := exp1.GetSpans(), exp2.GetSpans()
	if n := len(spansNamed(first, "run ")); n != 0 {
		t.Errorf("the first host emitted %d run spans for a run that did not end there", n)
	}
	run := oneSpan(t, second, "run approval")
	want, _ := tracing.Parse(parent)
	if run.Parent.SpanID() != want.SpanID() || run.SpanContext.TraceID() != want.TraceID() {
		t.Errorf("run span: parent %s in trace %s; want the traceparent's %s in %s", run.Parent.SpanID(), run.SpanContext.TraceID(), want.SpanID(), want.TraceID())
	}
	ops1, ops2 := opSpans(t, first, "ap"), opSpans(t, second, "ap")
	if _, ok := ops1["1"]; !ok || len(ops1) != 1 {
		t.Errorf("first host's op spans: %s; want the submit step's alone", spanNames(first))
	}
	if _, ok := ops2["1"]; ok {
		t.Errorf("the second host emitted a span for the submit step it replayed: %s", spanNames(second))
	}
	if ops2["decision"].Name != "promise" || ops2["4"].Name != "step notify" {
		t.Errorf("second host's op spans: %s; want the promise's and the notify step's", spanNames(second))
	}
	for _, s := range append(append([]tracetest.SpanStub{}, first...), second...) {
		if !strings.HasPrefix(s.Name, "run ") {
			checkChild(t, s, run)
		}
	}
	if x := spansNamed(second, "execution "); len(x) != 1 || !ops2["decision"].StartTime.Before(x[0].StartTime) {
		t.Errorf("the promise's span starts at %v; want when the first host issued it, before the second's execution %v", ops2["decision"].StartTime, x)
	}
}

// TestTraceChildRuns: examples/fanout's child runs are in their parent's
// trace, each child's run span a child of the op that started it, its
// own ops its children.
func TestTraceChildRuns(t *testing.T) {
	tp, exp := newTraceProvider()
	h := newTestHost(t, Config{TracerProvider: tp})
	m := h.deploy(t, "./examples/fanout")
	r := h.runToEnd(t, m, "fanout", `{"n":2}`, "fan")
	if r.Status != store.RunCompleted || string(r.Result) != "5" {
		t.Fatalf("%s %s %s", r.Status, r.Result, r.Error)
	}
	spans := exp.GetSpans()
	parent := oneSpan(t, spans, "run fanout")
	ops := opSpans(t, spans, r.ID)
	children := spansNamed(spans, "run square")
	if len(children) != 2 {
		t.Fatalf("%d child run spans; spans: %s", len(children), spanNames(spans))
	}
	for _, c := range children {
		id := spanAttr(c, tracing.AttrRunID)
		var op tracetest.SpanStub
		for _, o := range ops {
			if o.Name == "child square" && c.Parent.SpanID() == o.SpanContext.SpanID() {
				op = o
			}
		}
		if op.Name == "" {
			t.Errorf("child run %s's span: parent %s is no child op of %s: %s", id, c.Parent.SpanID(), r.ID, spanNames(spans))
			continue
		}
		checkChild(t, op, parent)
		checkChild(t, c, op)
		if step := opSpans(t, spans, id)["1"]; step.Name != "step square" {
			t.Errorf("child run %s: op spans %s", id, spanNames(spans))
		} else {
			checkChild(t, step, c)
		}
	}
}
