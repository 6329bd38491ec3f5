package metrics

import (
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/skeinrun/skein/host/internal/modules"
	"github.com/skeinrun/skein/store"
)

// gather returns m's histogram of name whose label values are labels
// (in any order) from its registry.
func gather(t *testing.T, m *Metrics, name string, labels ...string) *dto.Histogram {
	t.Helper()
	fams, err := m.Registry(Sources{ActiveRuns: func() map[string]int { return nil }, Modules: func() modules.Stats { return modules.Stats{} }}).Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(labels))
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			var got []string
			for _, l := range s.GetLabel() {
				got = append(got, l.GetValue())
			}
			if slices.Sort(got); slices.Equal(got, want) {
				return s.GetHistogram()
			}
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return nil
}

// The run queue wait counts pending runs from their creation and timer
// wakes from the timer's time, and leaves out runs due for another reason.
func TestRunsClaimed(t *testing.T) {
	m := NewMetrics()
	now := time.Now()
	ns := now.UnixNano()
	m.RunsClaimed([]store.ClaimedRun{
		{Run: store.Run{Status: store.RunPending, CreatedAt: now.Add(-2 * time.Second)}},
		{Run: store.Run{Status: store.RunSuspended, WakeAt: ns - int64(time.Second)}},
		{Run: store.Run{Status: store.RunSuspended, WakeAt: ns + int64(time.Hour)}}, // a settlement woke it
		{Run: store.Run{Status: store.RunRunning}},                                  // a crashed worker's
		{Run: store.Run{Status: store.RunPending, CreatedAt: now.Add(time.Second)}}, // another clock, ahead
	}, ns)
	if got := m.NS("").LeasesClaimed.Load(); got != 5 {
		t.Errorf("leases claimed %d, want 5", got)
	}
	h := gather(t, m, "skein_queue_wait_seconds", "default", "run")
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 3 {
		t.Errorf("run queue wait: %d observations, %v s; want 3, 3 s (2 + 1 + 0)", h.GetSampleCount(), h.GetSampleSum())
	}
	m.TasksClaimedNow([]store.Task{{VisibleAt: ns - int64(500*time.Millisecond), ClaimedAt: ns}, {ClaimedAt: ns}})
	if h := gather(t, m, "skein_queue_wait_seconds", "default", "task"); h.GetSampleCount() != 2 || h.GetSampleSum() != 0.5 || m.NS("").TasksClaimed.Load() != 2 {
		t.Errorf("task queue wait: %d observations, %v s, %d claimed; want 2, 0.5 s, 2", h.GetSampleCount(), h.GetSampleSum(), m.NS("").TasksClaimed.Load())
	}
}

// Op latency goes to its kind's and outcome's series; an op without a
// start or of another kind is not observed.
func TestOpSettled(t *testing.T) {
	m := NewMetrics()
	s := int64(time.Second)
	e := &m.NS("").Exec
	e.OpSettled("sleep", true, s, 3*s)
	e.OpSettled("call", false, s, 2*s)
	e.OpSettled("step", true, 0, 2*s)
	e.OpSettled("cancel", true, s, 2*s)
	for _, c := range []struct {
		kind, outcome string
		n             uint64
		sum           float64
	}{{"sleep", "ok", 1, 2}, {"call", "error", 1, 1}, {"call", "ok", 0, 0}, {"step", "ok", 0, 0}} {
		if h := gather(t, m, "skein_op_latency_seconds", "default", c.kind, c.outcome); h.GetSampleCount() != c.n || h.GetSampleSum() != c.sum {
			t.Errorf("%s/%s: %d observations, %v s; want %d, %v", c.kind, c.outcome, h.GetSampleCount(), h.GetSampleSum(), c.n, c.sum)
		}
	}
}

// Two hosts' registries are apart: what one counts the other does not.
func TestRegistriesApart(t *testing.T) {
	a, b := NewMetrics(), NewMetrics()
	a.NS("").OpSettled("step", true, 1, 2)
	if gather(t, a, "skein_op_latency_seconds", "default", "step", "ok").GetSampleCount() != 1 ||
		gather(t, b, "skein_op_latency_seconds", "default", "step", "ok").GetSampleCount() != 0 {
		t.Error("an observation of one host's metrics shows in another's")
	}
}

// BenchmarkOpSettled is the cost an op's settlement adds to the hot path.
func BenchmarkOpSettled(b *testing.B) {
	e := &NewMetrics().NS("").Exec
	for i := range b.N {
		e.OpSettled("step", true, 1, int64(i)+2)
	}
}

// BenchmarkOpsRecorded is the counter add beside it, for scale.
func BenchmarkOpsRecorded(b *testing.B) {
	e := &NewMetrics().NS("").Exec
	for range b.N {
		e.OpsRecorded.Add(1)
	}
}

// Claims and tasks count in their run's namespace; CPU reads a
// namespace's running time without making its counters.
func TestByNamespace(t *testing.T) {
	m := NewMetrics()
	now := time.Now()
	m.RunsClaimed([]store.ClaimedRun{{Run: store.Run{ID: "acme/r1", Status: store.RunPending, CreatedAt: now}},
		{Run: store.Run{ID: "acme/r1.c", Status: store.RunRunning}}, {Run: store.Run{ID: "r2", Status: store.RunRunning}}}, now.UnixNano())
	m.TasksClaimedNow([]store.Task{{RunID: "acme/r1", ClaimedAt: now.UnixNano()}})
	if a, d := m.NS("acme"), m.NS(""); a.LeasesClaimed.Load() != 2 || d.LeasesClaimed.Load() != 1 || a.TasksClaimed.Load() != 1 || d.TasksClaimed.Load() != 0 {
		t.Errorf("leases acme %d, default %d; tasks acme %d, default %d; want 2, 1, 1, 0",
			a.LeasesClaimed.Load(), d.LeasesClaimed.Load(), a.TasksClaimed.Load(), d.TasksClaimed.Load())
	}
	if h := gather(t, m, "skein_queue_wait_seconds", "acme", "run"); h.GetSampleCount() != 1 {
		t.Errorf("acme's run queue wait: %d observations, want 1", h.GetSampleCount())
	}
	if m.CPU("zeta") != 0 || m.Of("zeta/x") == nil {
		t.Fatal("CPU of an unknown namespace")
	}
	m.Of("zeta/x").Ran(3 * time.Second)
	m.Of("zeta/y").Ran(-time.Second) // a clock step back adds nothing
	if m.CPU("zeta") != 3*time.Second || m.CPU("") != 0 {
		t.Errorf("CPU zeta %v, default %v; want 3s, 0", m.CPU("zeta"), m.CPU(""))
	}
}
