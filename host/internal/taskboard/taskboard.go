// Package taskboard is where a run's new remote activity tasks meet the
// claims of workers waiting in the same process (eager dispatch), and the
// pace of the sweep of expired task leases.
package taskboard

import (
	"slices"
	"sync"
	"time"

	"github.com/skeinrun/skein/store"
)

// Board is where a run's new remote tasks meet the claims waiting in
// this process. A claim that found nothing in the store waits on the
// board; a run that commits new tasks hands them to waiting claims in the
// same commit (they are stored claimed: eager dispatch), or, when none
// waits for their names, wakes the claims to look in the store. It also
// paces the sweep of expired leases.
type Board struct {
	mu        sync.Mutex
	queued    chan struct{} // closed (and replaced) when tasks are queued
	waiters   []*Waiter
	lastSweep time.Time
}

// Claim is what a waiting claim asks for: up to Max tasks of the
// activities Names, for Worker.
type Claim struct {
	Worker string
	Names  []string
	Max    int
}

// Waiter is a claim waiting on the board.
type Waiter struct {
	o        Claim
	ttl      time.Duration
	ch       chan struct{} // closed when the tasks given are committed, or given back
	reserved bool          // tasks were given; ch closes once their commit ends
	got      []store.Task
}

// Given returns a channel closed when the waiter was given tasks and
// their commit has ended (or when the tasks were given back).
func (w *Waiter) Given() <-chan struct{} { return w.ch }

// Wait returns a channel closed when tasks are queued next.
func (b *Board) Wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queued == nil {
		b.queued = make(chan struct{})
	}
	return b.queued
}

// Notify wakes the claims waiting for tasks.
func (b *Board) Notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queued != nil {
		close(b.queued)
		b.queued = nil
	}
}

// Register puts a claim on the board.
func (b *Board) Register(o Claim, ttl time.Duration) *Waiter {
	w := &Waiter{o: o, ttl: ttl, ch: make(chan struct{})}
	b.mu.Lock()
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	return w
}

// Unregister takes w off the board and returns the tasks it was given,
// once their commit has ended (none if it failed).
func (b *Board) Unregister(w *Waiter) []store.Task {
	b.mu.Lock()
	if !w.reserved {
		b.waiters = slices.DeleteFunc(b.waiters, func(x *Waiter) bool { return x == w })
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	<-w.ch
	return w.got
}

// Reserve gives the new tasks of a batch about to be committed to the
// claims waiting for their names, first come first served, each up to
// its Max: a task given is marked claimed by the claim's worker, as the
// store will keep it. It returns the claims given tasks; the committer
// calls HandOver with them once the commit has ended.
func (b *Board) Reserve(tasks []store.Task, now int64) []*Waiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiters) == 0 {
		return nil
	}
	var used []*Waiter
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
	b.waiters = slices.DeleteFunc(b.waiters, func(w *Waiter) bool { return w.reserved })
	return used
}

// HandOver ends the reservations of a commit: the claims get their tasks
// if it succeeded, none if it failed (they look in the store again).
func HandOver(used []*Waiter, committed bool) {
	for _, w := range used {
		if !committed {
			w.got = nil
		}
		close(w.ch)
	}
}

// SweepDue reports whether a sweep of expired leases is due (at most one
// every interval), and if so counts it as started.
func (b *Board) SweepDue(interval time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.lastSweep) < interval {
		return false
	}
	b.lastSweep = time.Now()
	return true
}
