package host

import (
	"slices"
	"sync"
	"time"

	"github.com/skeinrun/skein/store"
)

// taskBoard is where a run's new remote tasks meet the claims waiting in
// this process. A claim that found nothing in the store waits on the
// board; a run that commits new tasks hands them to waiting claims in the
// same commit (they are stored claimed: eager dispatch), or, when none
// waits for their names, wakes the claims to look in the store. It also
// paces the sweep of expired leases.
type taskBoard struct {
	mu        sync.Mutex
	queued    chan struct{} // closed (and replaced) when tasks are queued
	waiters   []*claimWaiter
	lastSweep time.Time
}

// claimWaiter is a claim waiting on the board.
type claimWaiter struct {
	o        ClaimOptions
	ttl      time.Duration
	ch       chan struct{} // closed when the tasks given are committed, or given back
	reserved bool          // tasks were given; ch closes once their commit ends
	got      []store.Task
}

// wait returns a channel closed when tasks are queued next.
func (b *taskBoard) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queued == nil {
		b.queued = make(chan struct{})
	}
	return b.queued
}

// notify wakes the claims waiting for tasks.
func (b *taskBoard) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queued != nil {
		close(b.queued)
		b.queued = nil
	}
}

// register puts a claim on the board.
func (b *taskBoard) register(o ClaimOptions, ttl time.Duration) *claimWaiter {
	w := &claimWaiter{o: o, ttl: ttl, ch: make(chan struct{})}
	b.mu.Lock()
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	return w
}

// unregister takes w off the board and returns the tasks it was given,
// once their commit has ended (none if it failed).
func (b *taskBoard) unregister(w *claimWaiter) []store.Task {
	b.mu.Lock()
	if !w.reserved {
		b.waiters = slices.DeleteFunc(b.waiters, func(x *claimWaiter) bool { return x == w })
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	<-w.ch
	return w.got
}

// reserve gives the new tasks of a batch about to be committed to the
// claims waiting for their names, first come first served, each up to
// its Max: a task given is marked claimed by the claim's worker, as the
// store will keep it. It returns the claims given tasks; the committer
// calls handOver with them once the commit has ended.
func (b *taskBoard) reserve(tasks []store.Task, now int64) []*claimWaiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiters) == 0 {
		return nil
	}
	var used []*claimWaiter
	for i := range tasks {
		t := &tasks[i]
		if t.State != store.TaskQueued {
			continue
		}
		for _, w := range b.waiters {
			if len(w.got) < w.o.Max && slices.Contains(w.o.Names, t.Name) {
				t.State, t.Owner, t.ClaimedAt = store.TaskClaimed, w.o.Worker, now
				t.Expiry = store.LeaseEnd(now, w.ttl, now, t.Timeout)
				w.got = append(w.got, *t)
				if !w.reserved {
					w.reserved = true
					used = append(used, w)
				}
				break
			}
		}
	}
	b.waiters = slices.DeleteFunc(b.waiters, func(w *claimWaiter) bool { return w.reserved })
	return used
}

// handOver ends the reservations of a commit: the claims get their tasks
// if it succeeded, none if it failed (they look in the store again).
func handOver(used []*claimWaiter, committed bool) {
	for _, w := range used {
		if !committed {
			w.got = nil
		}
		close(w.ch)
	}
}

// sweepDue reports whether a sweep of expired leases is due (at most one
// every interval), and if so counts it as started.
func (b *taskBoard) sweepDue(interval time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.lastSweep) < interval {
		return false
	}
	b.lastSweep = time.Now()
	return true
}
