package main

// The metrics of a real `skein serve`, scraped after runs of every kind
// of op and parsed with the Prometheus library's own parser.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestServeMetricsPrometheus runs a race (steps and a timer), a run of
// remote activity calls that the test claims and completes through the
// worker protocol, and an approval whose
// promise is settled with an error, then scrapes /metrics: the text
// parses with expfmt's TextParser, every series docs/observability.md
// lists is there with its type, and the histograms count what was done:
// the op latency one observation per settled op of each kind and outcome
// (as GET /v1/runs/{id}/ops lists them), the task queue wait one per
// claimed task, the run queue wait at least one per run started.
func TestServeMetricsPrometheus(t *testing.T) {
	t.Parallel()
	const token = "p-s3cret"
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--token", token)
	deployExample(t, s, token, "./examples/race")
	deployExample(t, s, token, "./examples/approval")
	startRemote(t, s, token, `{"n":3,"name":"echo","parallel":true}`, "p-remote")
	want(t, "start", s.call(t, "POST", "/v1/runs", token, map[string]any{"module": "race", "id": "p-race"}), 201, "")
	want(t, "start", s.call(t, "POST", "/v1/runs", token, map[string]any{"module": "approval", "id": "p-appr", "input": map[string]any{"request": "x"}}), 201, "")
	serveEcho(t, s, token, 3)
	s.awaitStatus(t, "p-race", token, "completed")
	s.awaitStatus(t, "p-remote", token, "completed")
	settleWhenIssued(t, s, token, "p-appr.decision", `{"error":"denied"}`)
	s.awaitStatus(t, "p-appr", token, "failed")

	fams := scrapeSettled(t, s, token)
	for name, typ := range documentedSeries(t) {
		f := fams[name]
		switch {
		case f == nil && name == "skein_task_queue": // absent while no task waits or runs
		case f == nil:
			t.Errorf("/metrics lacks %s (docs/observability.md lists it)", name)
		case strings.ToLower(f.GetType().String()) != typ:
			t.Errorf("%s is a %s; docs/observability.md says %s", name, f.GetType(), typ)
		}
	}
	for name := range fams {
		if _, ok := documentedSeries(t)[name]; !ok {
			t.Errorf("/metrics has %s, which docs/observability.md does not list", name)
		}
	}

	v := func(name string, labels ...string) float64 { return promValue(t, fams, name, labels...) }
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"skein_runs", []string{"namespace", "default", "status", "completed"}, 2},
		{"skein_runs", []string{"namespace", "default", "status", "failed"}, 1},
		{"skein_runs_ended_total", []string{"namespace", "default", "status", "completed"}, 2},
		{"skein_runs_ended_total", []string{"namespace", "default", "status", "failed"}, 1},
		{"skein_tasks_total", []string{"event", "completed", "namespace", "default"}, 3},
		{"skein_live_instances", nil, 0},
		{"skein_active_runs", []string{"namespace", "default"}, 0},
	} {
		if got := v(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	execs := v("skein_executions_total", "namespace", "default")
	if h := promHistogram(t, fams, "skein_activation_seconds", "namespace", "default"); float64(h.GetSampleCount()) != execs || execs < 3 {
		t.Errorf("skein_activation_seconds counts %d activations of %v executions, want as many, >= 3", h.GetSampleCount(), execs)
	}
	if h := promHistogram(t, fams, "skein_store_commit_seconds"); h.GetSampleCount() < 3 || h.GetSampleSum() <= 0 {
		t.Errorf("skein_store_commit_seconds: %d commits, %v s", h.GetSampleCount(), h.GetSampleSum())
	}
	claimed := v("skein_tasks_total", "event", "claimed", "namespace", "default")
	if h := promHistogram(t, fams, "skein_queue_wait_seconds", "namespace", "default", "queue", "task"); float64(h.GetSampleCount()) != claimed || claimed < 3 {
		t.Errorf("task queue wait counts %d of %v claimed tasks, want as many, >= 3", h.GetSampleCount(), claimed)
	}
	leases := v("skein_leases_claimed_total", "namespace", "default")
	if h := promHistogram(t, fams, "skein_queue_wait_seconds", "namespace", "default", "queue", "run"); h.GetSampleCount() < 3 || float64(h.GetSampleCount()) > leases {
		t.Errorf("run queue wait counts %d claims, want the 3 runs started at least, at most the %v leases claimed", h.GetSampleCount(), leases)
	}
	checkOpLatency(t, s, token, fams, "p-race", "p-remote", "p-appr")
}

// scrapeSettled scrapes /metrics until the gauges of work in progress
// read 0: a run's status is stored before its executor lets go of the
// run, so for a moment after a run ends it still counts as active.
func scrapeSettled(t *testing.T, s *skeinServer, token string) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, ct, body := scrape(t, s, token)
		if code != 200 || !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			t.Fatalf("/metrics: %d %q\n%s", code, ct, body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("/metrics does not parse: %v\n%s", err, body)
		}
		idle := promValue(t, fams, "skein_active_runs", "namespace", "default") == 0 && promValue(t, fams, "skein_live_instances") == 0
		if idle || time.Now().After(deadline) {
			return fams
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkOpLatency: skein_op_latency_seconds counts the settled ops of the
// runs by kind and outcome, and a timer's latency is about its sleep (its
// deadline is on the run's virtual clock, a little behind the wall clock).
func checkOpLatency(t *testing.T, s *skeinServer, token string, fams map[string]*dto.MetricFamily, ids ...string) {
	t.Helper()
	done := map[[2]string]int{}
	for _, id := range ids {
		r := s.call(t, "GET", "/v1/runs/"+id+"/ops", token, nil)
		want(t, "ops of "+id, r, 200, "")
		var v struct {
			Ops []struct{ Kind, Status string }
		}
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		for _, o := range v.Ops {
			if o.Kind != "cancel" && o.Status != "pending" {
				done[[2]string{o.Kind, o.Status}]++
			}
		}
	}
	if done[[2]string{"step", "ok"}] < 5 || done[[2]string{"call", "ok"}] != 3 || done[[2]string{"promise", "error"}] != 1 || done[[2]string{"sleep", "ok"}] != 1 {
		t.Fatalf("the runs settled %v; want steps, 3 calls, a failed promise, a timer", done)
	}
	for _, kind := range []string{"step", "call", "sleep", "promise", "child"} {
		for _, outcome := range []string{"ok", "error"} {
			h := promHistogram(t, fams, "skein_op_latency_seconds", "kind", kind, "namespace", "default", "outcome", outcome)
			if got, want := h.GetSampleCount(), uint64(done[[2]string{kind, outcome}]); got != want {
				t.Errorf("op latency {kind=%s,outcome=%s} counts %d ops; the runs settled %d", kind, outcome, got, want)
			}
		}
	}
	if h := promHistogram(t, fams, "skein_op_latency_seconds", "kind", "sleep", "namespace", "default", "outcome", "ok"); h.GetSampleSum() < 0.15 {
		t.Errorf("the race's 200 ms timer took %v s from issue to outcome", h.GetSampleSum())
	}
}

// serveEcho is a remote worker through the worker protocol: it claims n
// echo tasks and completes each with its input.
func serveEcho(t *testing.T, s *skeinServer, token string, n int) {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for n > 0 {
		r := s.call(t, "POST", "/v1/tasks/claim", token, map[string]any{"worker": "p-w1", "names": []string{"echo"}, "max": n, "wait_ms": 1000})
		want(t, "claim", r, 200, "")
		var got struct {
			Tasks []struct {
				RunID   string          `json:"run_id"`
				Key     string          `json:"key"`
				Attempt int             `json:"attempt"`
				Input   json.RawMessage `json:"input"`
			}
		}
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		for _, tk := range got.Tasks {
			want(t, "complete", s.call(t, "POST", "/v1/tasks/complete", token, map[string]any{"run_id": tk.RunID, "key": tk.Key,
				"attempt": tk.Attempt, "worker": "p-w1", "result": tk.Input}), 200, "")
			n--
		}
		if n > 0 && time.Now().After(deadline) {
			t.Fatalf("%d echo tasks not claimed after %v", n, runWait)
		}
	}
}

// settleWhenIssued settles the promise full (run.key) once its run has
// issued it.
func settleWhenIssued(t *testing.T, s *skeinServer, token, full, body string) {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for {
		r := s.call(t, "POST", "/v1/promises/"+full, token, body)
		if r.status == 200 {
			return
		}
		if r.status != 404 || time.Now().After(deadline) {
			t.Fatalf("settle %s: %s", full, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// promMetric is the sample of family name with exactly labels (pairs of
// name and value), failing the test when there is none.
func promMetric(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("/metrics lacks %s", name)
	}
	for _, m := range f.GetMetric() {
		got := []string{}
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName(), l.GetValue())
		}
		if fmt.Sprint(got) == fmt.Sprint(append([]string{}, labels...)) {
			return m
		}
	}
	t.Fatalf("/metrics lacks %s%v", name, labels)
	return nil
}

// promValue is the value of a counter or gauge sample.
func promValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := promMetric(t, fams, name, labels...)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s%v is neither a counter nor a gauge", name, labels)
	return 0
}

// promHistogram is a histogram sample, checked: its buckets are
// cumulative and within its count, and its sum is not negative.
func promHistogram(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Histogram {
	t.Helper()
	h := promMetric(t, fams, name, labels...).GetHistogram()
	if h == nil {
		t.Fatalf("%s%v is not a histogram", name, labels)
	}
	prev, bound := uint64(0), math.Inf(-1)
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() < prev || b.GetUpperBound() <= bound || b.GetCumulativeCount() > h.GetSampleCount() {
			t.Errorf("%s%v: bucket le=%v count %d after le=%v count %d, of %d", name, labels, b.GetUpperBound(), b.GetCumulativeCount(), bound, prev, h.GetSampleCount())
		}
		prev, bound = b.GetCumulativeCount(), b.GetUpperBound()
	}
	if len(h.GetBucket()) < 5 || h.GetSampleSum() < 0 {
		t.Errorf("%s%v: %d buckets, sum %v", name, labels, len(h.GetBucket()), h.GetSampleSum())
	}
	return h
}

var docSeries = regexp.MustCompile("(?m)^\\| `(skein_[a-z_]+)(?:\\{[a-z_,]*\\})?` \\| ([a-z]+) \\|")

// documentedSeries are the series docs/observability.md lists, with
// their types.
func documentedSeries(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(wasmbuild.Root(), "docs/observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range docSeries.FindAllStringSubmatch(string(doc), -1) {
		out[m[1]] = m[2]
	}
	if len(out) < 20 {
		t.Fatalf("docs/observability.md lists %d series", len(out))
	}
	return out
}
