package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skeinrun/skein/store"
)

// NS is what a host counts of one namespace's runs: every series about
// runs, ops, tasks and executions is one of these per namespace, with a
// namespace label (docs/observability.md). Every field is safe for
// concurrent use.
type NS struct {
	Exec                        // the executions': ops recorded, reused instances, fed ops, op latency
	Executions    atomic.Uint64 // instantiations of a run
	Replays       atomic.Uint64 // executions that started with a non-empty journal
	EvictReplay   atomic.Uint64 // instances dropped to replay at once (EvictAlways)
	EvictSuspend  atomic.Uint64 // instances dropped because the run suspended
	LeasesClaimed atomic.Uint64 // leases Work took on runs
	LeasesLost    atomic.Uint64 // leases lost while driving (another worker claimed the run)
	DriveFailures atomic.Uint64 // drives by Work that failed and back off (retry.go)
	RunsPruned    atomic.Uint64 // ended runs this process deleted (retention.go)
	// Remote activity tasks (taskapi.go): attempts handed to workers,
	// completed, failed by their worker, and timed out (lease expired).
	TasksClaimed, TasksCompleted, TasksFailed, TasksTimedOut atomic.Uint64
	Ended                                                    [len(Statuses)]atomic.Uint64
	// CPU is the running time of the namespace's executions, in ns: as
	// MaxExecutionCPU measures it (wall time less the waits at idle
	// points, in step-body sleeps and for the store), added as each
	// execution ends.
	CPU atomic.Int64

	name                          string
	ops                           opLatency
	activation, runWait, taskWait prometheus.Observer
}

// newNS returns the counters of namespace name, its histogram series
// resolved once from hist so that an observation looks up no label.
func newNS(name string, hist *histograms) *NS {
	n := &NS{name: name}
	for i, k := range opKinds {
		n.ops[i][0] = hist.opVec.WithLabelValues(name, k, "ok")
		n.ops[i][1] = hist.opVec.WithLabelValues(name, k, "error")
	}
	n.Exec.ops = &n.ops
	n.activation = hist.activationVec.WithLabelValues(name)
	n.runWait = hist.waitVec.WithLabelValues(name, "run")
	n.taskWait = hist.waitVec.WithLabelValues(name, "task")
	return n
}

// Name is the namespace's name.
func (n *NS) Name() string { return n.name }

// Execution counts an execution of a run that starts.
func (n *NS) Execution(replay bool) {
	n.Executions.Add(1)
	if replay {
		n.Replays.Add(1)
	}
}

// Ran adds the running time d of an execution that ended to CPU.
func (n *NS) Ran(d time.Duration) {
	if d > 0 {
		n.CPU.Add(int64(d))
	}
}

// Activated observes the activation latency of an execution that began
// activating at start, at its first host call (the guest's hello), and
// clears start. Executions that are not a driven run's (describe,
// verifying replays) have no start and are not observed.
func (n *NS) Activated(start *time.Time) {
	if start.IsZero() {
		return
	}
	n.activation.Observe(time.Since(*start).Seconds())
	*start = time.Time{}
}

// RunEnded counts a run that reached status s in this process.
func (n *NS) RunEnded(s store.RunStatus) {
	for i, st := range Statuses {
		if st == s {
			n.Ended[i].Add(1)
		}
	}
}
