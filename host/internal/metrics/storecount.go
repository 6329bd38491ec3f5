package metrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skeinrun/skein/store"
)

// StoreCounts are the series read from the store at each scrape, by
// namespace: the runs by status, counted a page at a time up to a cap
// per status over all namespaces (RATIONALE.md), and the remote activity
// task queues by activity name (its local part; the namespace is its own
// label). The task queue's name label is bounded by the activity names
// the deployed modules were granted, not by the runs.
type StoreCounts struct {
	Store     store.Store
	Cap, Page int // runs counted per status, and per query
	runs      *prometheus.Desc
	capped    *prometheus.Desc
	queue     *prometheus.Desc
}

// NewStoreCounts returns the store's series of st, counting runs up to
// limit per status, page at a time.
func NewStoreCounts(st store.Store, limit, page int) *StoreCounts {
	return &StoreCounts{Store: st, Cap: limit, Page: page,
		runs: prometheus.NewDesc("skein_runs", fmt.Sprintf("Runs in the store by status (counted up to %d per status, all namespaces together).", limit),
			[]string{"namespace", "status"}, nil),
		capped: prometheus.NewDesc("skein_runs_count_capped", fmt.Sprintf("1 where counting the status stopped at %d runs (all namespaces together): skein_runs is then at least its value.", limit),
			[]string{"namespace", "status"}, nil),
		queue: prometheus.NewDesc("skein_task_queue", "Remote activity tasks by activity name and state (queued: waiting for a worker; claimed: held by one).",
			[]string{"namespace", "name", "state"}, nil),
	}
}

// Gatherer returns a prometheus.Gatherer of the store's series that
// reads the store under ctx (a scrape's request) when it gathers. A
// failed read leaves its series out and is the Gatherer's error, after
// what could be read.
func (s *StoreCounts) Gatherer(ctx context.Context) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(storeCollector{s, ctx})
		return reg.Gather()
	})
}

// storeCollector reads the store's series under a scrape's context.
type storeCollector struct {
	s   *StoreCounts
	ctx context.Context
}

// Describe sends the descriptions of the store's series.
func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.s.runs
	ch <- c.s.capped
	ch <- c.s.queue
}

// Collect reads the store; a failed read is an invalid metric, which
// makes the gathering fail with its error.
func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	counts, capped, err := s.CountRuns(c.ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(s.runs, fmt.Errorf("metrics: count runs: %w", err))
	} else {
		for ns, cs := range counts {
			for i, st := range Statuses {
				ch <- prometheus.MustNewConstMetric(s.runs, prometheus.GaugeValue, float64(cs[i]), ns, string(st))
				ch <- prometheus.MustNewConstMetric(s.capped, prometheus.GaugeValue, flag(capped[i]), ns, string(st))
			}
		}
	}
	qs, err := s.Store.TaskQueues(c.ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(s.queue, fmt.Errorf("metrics: task queues: %w", err))
		return
	}
	for _, q := range qs {
		ns, name := store.SplitQualified(q.Name)
		ch <- prometheus.MustNewConstMetric(s.queue, prometheus.GaugeValue, float64(q.Queued), ns, name, "queued")
		ch <- prometheus.MustNewConstMetric(s.queue, prometheus.GaugeValue, float64(q.Claimed), ns, name, "claimed")
	}
}

// RunCounts are runs counted by namespace, of each status (in the order
// of Statuses).
type RunCounts map[string]*[len(Statuses)]int

// CountRuns counts the stored runs of each status by namespace, up to
// s.Cap of a status over all namespaces, and reports which statuses
// reached it. Every namespace with a run of any status counted, and the
// default namespace, has a count of every status.
func (s *StoreCounts) CountRuns(ctx context.Context) (counts RunCounts, capped [len(Statuses)]bool, err error) {
	counts = RunCounts{store.DefaultNamespace: {}}
	for i, st := range Statuses {
		after, n := "", 0
		for n < s.Cap {
			limit := min(s.Page, s.Cap-n)
			rs, err := s.Store.Runs(ctx, store.RunFilter{Status: st, Limit: limit, After: after})
			if err != nil {
				return counts, capped, err
			}
			for _, r := range rs {
				ns := store.NamespaceOf(r.ID)
				if counts[ns] == nil {
					counts[ns] = &[len(Statuses)]int{}
				}
				counts[ns][i]++
			}
			n += len(rs)
			if len(rs) < limit {
				break
			}
			after = rs[len(rs)-1].ID
		}
		capped[i] = n >= s.Cap
	}
	return counts, capped, nil
}

// flag is 1 for true, 0 for false: a gauge of a condition.
func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
