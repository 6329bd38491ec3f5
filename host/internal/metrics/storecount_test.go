package metrics

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

// queueStore is a memory store with the task queues given.
type queueStore struct {
	store.Store
	queues []store.TaskQueue
}

func (s queueStore) TaskQueues(context.Context) ([]store.TaskQueue, error) { return s.queues, nil }

// The store's series are by namespace: the runs counted of each, every
// status of every namespace seen; a task queue's name is its local part.
func TestStoreCountsNamespaces(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	for _, id := range []string{"a1", "a2", "acme/b1", "zeta/c1", "zeta/c2", "zeta/c3"} {
		if _, _, err := st.CreateRun(ctx, store.Run{ID: id, Status: store.RunPending, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	qs := queueStore{st, []store.TaskQueue{{Name: "charge", Queued: 1}, {Name: "acme/charge", Queued: 2, Claimed: 1}}}
	got := gathered(t, NewStoreCounts(qs, 100, 2))
	want := map[string]float64{
		`skein_task_queue{name="charge",namespace="acme",state="claimed"}`:    1,
		`skein_task_queue{name="charge",namespace="acme",state="queued"}`:     2,
		`skein_task_queue{name="charge",namespace="default",state="claimed"}`: 0,
		`skein_task_queue{name="charge",namespace="default",state="queued"}`:  1,
	}
	for _, ns := range []string{"acme", "default", "zeta"} {
		for _, st := range Statuses {
			want[fmt.Sprintf("skein_runs{namespace=%q,status=%q}", ns, st)] = 0
			want[fmt.Sprintf("skein_runs_count_capped{namespace=%q,status=%q}", ns, st)] = 0
		}
	}
	want[`skein_runs{namespace="default",status="pending"}`] = 2
	want[`skein_runs{namespace="acme",status="pending"}`] = 1
	want[`skein_runs{namespace="zeta",status="pending"}`] = 3
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("store series:\n%v\nwant\n%v", got, want)
	}
	// A cap of 4 over all namespaces: the ids in order (a1 a2 acme/b1
	// zeta/c1) are counted, and every namespace seen is flagged capped.
	counts, capped, err := NewStoreCounts(qs, 4, 3).CountRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pend := fmt.Sprint(counts["default"][0], counts["acme"][0], counts["zeta"][0], capped[0], capped[1])
	if pend != "2 1 1 true false" {
		t.Errorf("capped at 4: pending default, acme, zeta, capped pending, running = %s; want 2 1 1 true false", pend)
	}
}

// gathered are the store's series of c: series (name and labels, as
// printed) -> value.
func gathered(t *testing.T, c *StoreCounts) map[string]float64 {
	t.Helper()
	fams, err := c.Gatherer(context.Background()).Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out[f.GetName()+"{"+strings.Join(ls, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}
