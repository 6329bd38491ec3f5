package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The histograms' labels are bounded by design: an op's kind is one of the
// five durable op kinds and its outcome ok or error (ten series); a queue
// is run or task (two); a namespace is one of the few an operator made.
// No run id, key, function, module or activity name is ever a label, so
// the series do not grow with the runs.

// opKinds are the durable op kinds (abi.OpKind's names), the values of the
// op latency's kind label, in the order of opLatency's rows.
var opKinds = [...]string{"step", "call", "sleep", "promise", "child"}

// Buckets (upper bounds, seconds). Activation and commits are sub-second
// work; an op's latency spans an inline step (microseconds) to a timer or
// a promise that waits for hours; a queue wait, a slot freed at once to a
// backlog of a stopped worker.
var (
	activationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
	commitBuckets     = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}
	opBuckets         = []float64{0.0001, 0.001, 0.01, 0.1, 0.5, 1, 5, 10, 60, 300, 1800, 3600, 21600, 86400}
	waitBuckets       = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 10, 60, 300, 1800, 3600}
)

// histograms are the host's histograms, each registered in its registry:
// the store's commits for the whole process, the rest by namespace (each
// NS resolves its series once).
type histograms struct {
	commit                        prometheus.Histogram
	activationVec, opVec, waitVec *prometheus.HistogramVec
}

// opLatency holds the op latency's series, resolved once so that an
// observation looks up no label: [kind][0] ok, [kind][1] error.
type opLatency [len(opKinds)][2]prometheus.Observer

func newHistograms() histograms {
	h := histograms{
		activationVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "skein_activation_seconds",
			Help: "From the start of a run's execution to the guest's first host call.", Buckets: activationBuckets}, []string{"namespace"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "skein_store_commit_seconds",
			Help: "Store commits (batches of records and run updates).", Buckets: commitBuckets}),
		opVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "skein_op_latency_seconds",
			Help:    "Durable ops from their issue to their outcome (kind: step, call, sleep, promise, child; outcome: ok, error), observed as an execution records the outcome.",
			Buckets: opBuckets}, []string{"namespace", "kind", "outcome"}),
		waitVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "skein_queue_wait_seconds",
			Help:    "Queue waits: a due run until this process's worker claims it for a free slot (queue=run), a remote activity task until a worker claims it (queue=task).",
			Buckets: waitBuckets}, []string{"namespace", "queue"}),
	}
	return h
}

// collectors are the histograms to register.
func (h *histograms) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.activationVec, h.commit, h.opVec, h.waitVec}
}

// OpSettled observes the latency of a durable op of kind, issued at start
// and settled at end (unix ns by the host's clock), ok or failed. An op
// whose start is not known (0), or that is not of a durable kind (the
// run's cancellation record), is not observed.
func (e *Exec) OpSettled(kind string, ok bool, start, end int64) {
	if start == 0 || e.ops == nil {
		return
	}
	i := opKindIndex(kind)
	if i < 0 {
		return
	}
	o := 1
	if ok {
		o = 0
	}
	e.ops[i][o].Observe(max(time.Duration(end-start), 0).Seconds())
}

// opKindIndex is the row of kind in opLatency, or -1.
func opKindIndex(kind string) int {
	switch kind {
	case "step":
		return 0
	case "call":
		return 1
	case "sleep":
		return 2
	case "promise":
		return 3
	case "child":
		return 4
	}
	return -1
}
