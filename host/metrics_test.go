package host

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/skeinrun/skein/store"
)

// samples parses Prometheus text into series -> value (series as printed,
// labels included), failing on a line that is not a comment or a sample.
func samples(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		if _, dup := out[line[:i]]; dup {
			t.Fatalf("metrics: series %s twice", line[:i])
		}
		out[line[:i]] = v
	}
	return out
}

func writeMetrics(t *testing.T, h *Host) map[string]float64 {
	t.Helper()
	var b bytes.Buffer
	if err := h.WriteMetrics(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return samples(t, b.String())
}

// The race with a replay at every wait: the counters agree with what the
// run did.
func TestMetricsRace(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictAlways})
	m := h.deploy(t, "./examples/race")
	r := h.runToEnd(t, m, "race", "null", "race-metrics")
	if r.Status != store.RunCompleted {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	if _, err := h.Start(context.Background(), StartOptions{Module: m.Hash, Workflow: "race", ID: "waiting"}); err != nil {
		t.Fatal(err)
	}
	s := writeMetrics(t, h.Host)
	execs := float64(h.c.execs[r.ID])
	for series, want := range map[string]float64{
		`skein_runs{namespace="default",status="completed"}`:              1,
		`skein_runs{namespace="default",status="pending"}`:                1,
		`skein_runs{namespace="default",status="failed"}`:                 0,
		`skein_runs_count_capped{namespace="default",status="completed"}`: 0,
		`skein_runs_ended_total{namespace="default",status="completed"}`:  1,
		`skein_runs_ended_total{namespace="default",status="failed"}`:     0,
		`skein_executions_total{namespace="default"}`:                     execs,
		`skein_replays_total{namespace="default"}`:                        execs - 1,
		`skein_live_instances`:                                            0,
		`skein_active_runs{namespace="default"}`:                          0,
		`skein_activation_seconds_count{namespace="default"}`:             execs,
	} {
		if got, ok := s[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if execs < 2 {
		t.Errorf("EvictAlways: %v executions, want replays", execs)
	}
	if got := s[`skein_evictions_total{namespace="default",reason="replay"}`] + s[`skein_evictions_total{namespace="default",reason="suspend"}`]; got != execs-1 {
		t.Errorf("evictions %v, want %v (one before each replay)", got, execs-1)
	}
	// Five ops, the timer recorded pending first: at least six records.
	if got := s[`skein_ops_recorded_total{namespace="default"}`]; got < 6 {
		t.Errorf("skein_ops_recorded_total %v, want >= 6", got)
	}
	if got := s["skein_store_commit_seconds_count"]; got < 3 {
		t.Errorf("skein_store_commit_seconds_count %v, want >= 3", got)
	}
	checkHistogram(t, s, "skein_activation_seconds", `namespace="default"`)
	checkHistogram(t, s, "skein_store_commit_seconds", "")
	// Op latency: four steps and the timer, which was issued in the first
	// execution and settled in a later one, from its issue: about its
	// 200 ms (its deadline is on the run's virtual clock, which the issue
	// time on the wall clock may pass a little). No op failed.
	for series, want := range map[string]float64{
		`skein_op_latency_seconds_count{kind="step",namespace="default",outcome="ok"}`:    4,
		`skein_op_latency_seconds_count{kind="sleep",namespace="default",outcome="ok"}`:   1,
		`skein_op_latency_seconds_count{kind="step",namespace="default",outcome="error"}`: 0,
		`skein_op_latency_seconds_count{kind="call",namespace="default",outcome="ok"}`:    0,
	} {
		if got, ok := s[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if got := s[`skein_op_latency_seconds_sum{kind="sleep",namespace="default",outcome="ok"}`]; got < 0.15 {
		t.Errorf("the 200 ms timer's latency %v s", got)
	}
}

// checkHistogram: buckets are cumulative, +Inf equals _count, _sum >= 0;
// labels are the series' labels but le ("" none), as printed.
func checkHistogram(t *testing.T, s map[string]float64, name, labels string) {
	t.Helper()
	lb, suffix := "", ""
	if labels != "" {
		lb, suffix = labels+",", "{"+labels+"}"
	}
	prev := -1.0
	n := 0
	for _, le := range []string{"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"} {
		v, ok := s[fmt.Sprintf("%s_bucket{%sle=%q}", name, lb, le)]
		if !ok {
			continue
		}
		n++
		if v < prev {
			t.Errorf("%s: bucket le=%s %v < the one before, %v", name, le, v, prev)
		}
		prev = v
	}
	if n < 2 {
		t.Errorf("%s: %d buckets", name, n)
	}
	if inf := s[name+`_bucket{`+lb+`le="+Inf"}`]; inf != s[name+"_count"+suffix] {
		t.Errorf("%s: +Inf bucket %v != count %v", name, inf, s[name+"_count"+suffix])
	}
	if s[name+"_count"+suffix] > 0 && s[name+"_sum"+suffix] <= 0 {
		t.Errorf("%s: sum %v with %v observations", name, s[name+"_sum"+suffix], s[name+"_count"+suffix])
	}
}

// Counting runs by status reads pages and stops at the cap.
func TestMetricsRunsCap(t *testing.T) {
	h := newTestHostHooks(t, Config{}, testHooks{runsCountCap: 5, runsCountPage: 2})
	m := h.deploy(t, "./examples/race")
	for i := range 7 {
		if _, err := h.Start(context.Background(), StartOptions{Module: m.Hash, Workflow: "race", ID: fmt.Sprintf("r%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	s := writeMetrics(t, h.Host)
	if s[`skein_runs{namespace="default",status="pending"}`] != 5 || s[`skein_runs_count_capped{namespace="default",status="pending"}`] != 1 {
		t.Errorf("7 pending runs, cap 5: counted %v, capped %v", s[`skein_runs{namespace="default",status="pending"}`], s[`skein_runs_count_capped{namespace="default",status="pending"}`])
	}
	h.runsCountCap = 100
	s = writeMetrics(t, h.Host)
	if s[`skein_runs{namespace="default",status="pending"}`] != 7 || s[`skein_runs_count_capped{namespace="default",status="pending"}`] != 0 {
		t.Errorf("7 pending runs, pages of 2: counted %v, capped %v", s[`skein_runs{namespace="default",status="pending"}`], s[`skein_runs_count_capped{namespace="default",status="pending"}`])
	}
}
