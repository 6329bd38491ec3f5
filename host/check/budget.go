package check

import (
	"sync"
	"time"
)

// A check replays a run from every crash point of its journal: a journal
// of n settlements has n+1, each a whole execution, so the cost of a
// schedule grows with the square of its journal. Under Options.Budget
// the check estimates, after each run, how many of its crash points fit in
// its share of the time left (the time left, times the workers, over the
// schedules not yet done) at what the run itself took, and replays that
// many, spread over the journal: always the verifying replay of the whole
// journal (the last point) and the replay from nothing (the first), then
// points at even steps from a seeded offset. The report says how many of
// the crash points it replayed (Report.CrashPoints); a check that
// replays fewer than all says so in its summary, never silently.

// crashBudget shares Options.Budget between the schedules of a check.
type crashBudget struct {
	deadline time.Time // zero: no budget, every crash point is replayed
	workers  int

	mu      sync.Mutex
	pending int // schedules not yet done, the running ones included
}

func newCrashBudget(start time.Time, o Options, schedules int) *crashBudget {
	b := &crashBudget{workers: max(o.Parallelism, 1), pending: schedules}
	if o.Budget > 0 {
		b.deadline = start.Add(o.Budget)
	}
	return b
}

// done counts one schedule as done.
func (b *crashBudget) done() {
	b.mu.Lock()
	b.pending--
	b.mu.Unlock()
}

// allow returns how many of a run's total crash points to replay when one
// replay costs about cost: all of them without a budget or when they fit
// in the run's share of the time left, else as many as fit, but never
// fewer than two (or total, if smaller).
func (b *crashBudget) allow(total int, cost time.Duration) int {
	if b.deadline.IsZero() {
		return total
	}
	b.mu.Lock()
	pending := max(b.pending, 1)
	b.mu.Unlock()
	share := time.Until(b.deadline) * time.Duration(b.workers) / time.Duration(pending)
	n := int(share / max(cost, time.Microsecond))
	return max(min(n, total), min(2, total))
}

// crashPoints returns the crash points (1 to total) to replay when k of
// total fit: all of them in order, or total (the verifying replay), 1, and
// k-2 points at even steps over 2..total-1 from an offset that frac (in
// [0, 1)) chooses, so that schedules with the same journal length cover
// different points.
func crashPoints(total, k int, frac float64) []int {
	if k >= total {
		ps := make([]int, total)
		for i := range ps {
			ps[i] = i + 1
		}
		return ps
	}
	ps := []int{total, 1}[:min(k, 2)]
	inner := total - 2 // the points 2..total-1
	if m := k - len(ps); m > 0 && inner > 0 {
		step := float64(inner) / float64(m)
		for i := range m {
			ps = append(ps, 2+int((float64(i)+frac)*step))
		}
	}
	return ps
}
