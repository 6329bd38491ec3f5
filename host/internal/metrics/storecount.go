package metrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skeinrun/skein/store"
)

// StoreCounts are the series read from the store at each scrape: the
// runs by status, counted a page at a time up to a cap per status
// (RATIONALE.md), and the remote activity task queues by activity name.
// The task queue's name label is bounded by the activity names the
// deployed modules were granted, not by the runs.
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
		runs: prometheus.NewDesc("skein_runs", fmt.Sprintf("Runs in the store by status (counted up to %d per status).", limit),
			[]string{"status"}, nil),
		capped: prometheus.NewDesc("skein_runs_count_capped", fmt.Sprintf("1 where skein_runs stopped counting at %d.", limit),
			[]string{"status"}, nil),
		queue: prometheus.NewDesc("skein_task_queue", "Remote activity tasks by activity name and state (queued: waiting for a worker; claimed: held by one).",
			[]string{"name", "state"}, nil),
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
		for i, st := range Statuses {
			ch <- prometheus.MustNewConstMetric(s.runs, prometheus.GaugeValue, float64(counts[i]), string(st))
			ch <- prometheus.MustNewConstMetric(s.capped, prometheus.GaugeValue, flag(capped[i]), string(st))
		}
	}
	qs, err := s.Store.TaskQueues(c.ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(s.queue, fmt.Errorf("metrics: task queues: %w", err))
		return
	}
	for _, q := range qs {
		ch <- prometheus.MustNewConstMetric(s.queue, prometheus.GaugeValue, float64(q.Queued), q.Name, "queued")
		ch <- prometheus.MustNewConstMetric(s.queue, prometheus.GaugeValue, float64(q.Claimed), q.Name, "claimed")
	}
}

// CountRuns counts the stored runs of each status, up to s.Cap, and
// reports which reached it.
func (s *StoreCounts) CountRuns(ctx context.Context) (counts [len(Statuses)]int, capped [len(Statuses)]bool, err error) {
	for i, st := range Statuses {
		after := ""
		for counts[i] < s.Cap {
			rs, err := s.Store.Runs(ctx, store.RunFilter{Status: st, Limit: s.Page, After: after})
			if err != nil {
				return counts, capped, err
			}
			counts[i] += len(rs)
			if len(rs) < s.Page {
				break
			}
			after = rs[len(rs)-1].ID
		}
		if counts[i] >= s.Cap {
			counts[i], capped[i] = s.Cap, true
		}
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
