package host

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/skeinrun/skein/store"
)

// gatherText is g's series in the text format.
func gatherText(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// startIn creates the run local of namespace ns (its id qualified, as
// the namespaced view of the host will start it) and drives it to its
// end.
func startIn(t *testing.T, h *testHost, ns string, m store.Module, local string) store.Run {
	t.Helper()
	ctx := context.Background()
	id := store.Qualify(ns, local)
	if _, _, err := h.newRun(ctx, store.Run{ID: id, ModuleHash: m.Hash, Workflow: "race", Input: json.RawMessage("null"), Seed: 42}); err != nil {
		t.Fatal(err)
	}
	r, err := h.Drive(ctx, id, DriveOptions{WaitTimers: true})
	if err != nil || r.Status != store.RunCompleted {
		t.Fatalf("drive %s: %s %v", id, r.Status, err)
	}
	return r
}

// Runs in two namespaces: the root's gathering has the series of both
// and the server's; each namespace's has its own series only, with no
// text of the other's, and none of the server's.
func TestMetricsNamespaces(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictAlways})
	m := h.deploy(t, "./examples/race")
	ctx := context.Background()
	startIn(t, h, "default", m, "r-home")
	startIn(t, h, "acme", m, "r-acme")
	startIn(t, h, "acme", m, "r-acme2")
	if _, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "race", ID: "waiting"}); err != nil {
		t.Fatal(err)
	}

	root := samples(t, gatherText(t, h.MetricsGatherer(ctx)))
	for series, want := range map[string]float64{
		`skein_runs{namespace="default",status="completed"}`:                            1,
		`skein_runs{namespace="default",status="pending"}`:                              1,
		`skein_runs{namespace="acme",status="completed"}`:                               2,
		`skein_runs{namespace="acme",status="pending"}`:                                 0,
		`skein_runs_ended_total{namespace="default",status="completed"}`:                1,
		`skein_runs_ended_total{namespace="acme",status="completed"}`:                   2,
		`skein_op_latency_seconds_count{kind="sleep",namespace="acme",outcome="ok"}`:    2,
		`skein_op_latency_seconds_count{kind="sleep",namespace="default",outcome="ok"}`: 1,
		`skein_live_instances`: 0,
	} {
		if got, ok := root[series]; !ok || got != want {
			t.Errorf("root: %s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	for _, ns := range []string{"default", "acme"} {
		execs := root[`skein_executions_total{namespace="`+ns+`"}`]
		if execs < 2 || root[`skein_activation_seconds_count{namespace="`+ns+`"}`] != execs {
			t.Errorf("root: %s: %v executions, %v activations", ns, execs, root[`skein_activation_seconds_count{namespace="`+ns+`"}`])
		}
		cpu := root[`skein_execution_cpu_seconds_total{namespace="`+ns+`"}`]
		if cpu <= 0 || cpu != h.NamespaceCPU(ns).Seconds() {
			t.Errorf("root: %s: CPU %v s, NamespaceCPU %v", ns, cpu, h.NamespaceCPU(ns))
		}
	}
	if _, ok := root["skein_store_commit_seconds_count"]; !ok {
		t.Error("root: no skein_store_commit_seconds")
	}

	for ns, other := range map[string]string{"acme": "default", "default": "acme"} {
		text := gatherText(t, NamespaceGatherer(h.MetricsGatherer(ctx), ns))
		s := samples(t, text)
		if len(s) < 20 {
			t.Errorf("%s: %d series:\n%s", ns, len(s), text)
		}
		for series := range s {
			if !strings.Contains(series, `namespace="`+ns+`"`) {
				t.Errorf("%s: series %s", ns, series)
			}
		}
		for _, leak := range []string{`namespace="` + other + `"`, "skein_store_commit", "skein_live_instances", "skein_compiled_module"} {
			if strings.Contains(text, leak) {
				t.Errorf("%s's gathering holds %q", ns, leak)
			}
		}
		if ns == "default" && strings.Contains(text, "acme") {
			t.Errorf("default's gathering names acme:\n%s", text)
		}
		if ns == "acme" && (strings.Contains(text, "r-home") || strings.Contains(text, "waiting")) {
			t.Errorf("acme's gathering names a run of default:\n%s", text)
		}
		if s[`skein_runs_ended_total{namespace="`+ns+`",status="completed"}`] != root[`skein_runs_ended_total{namespace="`+ns+`",status="completed"}`] {
			t.Errorf("%s: its series differ from the root's", ns)
		}
	}
	if s := samples(t, gatherText(t, NamespaceGatherer(h.MetricsGatherer(ctx), "nobody"))); len(s) != 0 {
		t.Errorf("a namespace with nothing: %v", s)
	}
	if h.NamespaceCPU("nobody") != 0 {
		t.Errorf("NamespaceCPU of a namespace with nothing: %v", h.NamespaceCPU("nobody"))
	}
}

// NamespaceCPU only grows, by each execution's running time.
func TestMetricsNamespaceCPU(t *testing.T) {
	h := newTestHost(t, Config{})
	m := h.deploy(t, "./examples/race")
	if h.NamespaceCPU("acme") != 0 || h.NamespaceCPU("") != 0 {
		t.Fatalf("a new host: %v, %v", h.NamespaceCPU("acme"), h.NamespaceCPU(""))
	}
	startIn(t, h, "acme", m, "c1")
	first := h.NamespaceCPU("acme")
	if first <= 0 || h.NamespaceCPU("default") != 0 {
		t.Fatalf("after a run in acme: acme %v, default %v", first, h.NamespaceCPU("default"))
	}
	startIn(t, h, "acme", m, "c2")
	if h.NamespaceCPU("acme") <= first {
		t.Errorf("after a second run: %v, after the first %v", h.NamespaceCPU("acme"), first)
	}
	h.runToEnd(t, m, "race", "null", "c3")
	if h.NamespaceCPU("") <= 0 || h.NamespaceCPU("") != h.NamespaceCPU("default") {
		t.Errorf("default: %v, \"\": %v", h.NamespaceCPU("default"), h.NamespaceCPU(""))
	}
}
