package exec

import (
	"slices"

	"github.com/skeinrun/skein/host/internal/sched"
)

// A recorded choice is what a task learned from a Select: which of its
// futures settled first. The journal records it (the settlement order), so
// a replay makes the same choice; but two schedules may choose
// differently, and what a task does after a choice may legitimately
// differ between them. The simulation notes, for each op, the choices
// that could have shaped it: those its task made before issuing it, those
// its parent had made when it started the task, and those of every task
// whose end it awaited. The checker compares two schedules' ops at a key
// only when these agree (host/check/report.go).

// choice is the n-th Select of a task (by lineage path) and the key of the
// promise it chose; or, with Promise set, the outcome a task got from an
// external promise that the check settled itself (checkpromise.go), which
// differs between schedules as a Select's choice may.
type SelectChoice struct {
	Task    string
	Select  int
	Promise string
	Chose   string
}

// choices is the per-execution state of the simulation's choice
// tracking: each task's choices so far, and its count of Selects.
type choices struct {
	hist    map[sched.TaskID][]SelectChoice
	selects map[sched.TaskID]int
}

// of returns the choices that shaped task tid so far.
func (c *choices) of(tid sched.TaskID) []SelectChoice { return c.hist[tid] }

// spawned gives a new task its parent's choices.
func (c *choices) spawned(parent, child sched.TaskID) {
	if h := c.hist[parent]; len(h) > 0 {
		c.set(child, h)
	}
}

// observed notes that task tid learned that p settled first of n futures:
// a choice when n > 1; when p is a task's end, that task's choices; and
// when settledBy is not empty (how the check settled p, an external
// promise), that outcome.
func (c *choices) observed(s *sched.Sched, tid sched.TaskID, p sched.PromiseID, n int, settledBy string) {
	key, joins := s.PromiseOf(p)
	h := c.hist[tid]
	grown := false
	if joins != 0 {
		for _, ch := range c.hist[joins] {
			if !slices.Contains(h, ch) {
				if !grown {
					h, grown = slices.Clone(h), true
				}
				h = append(h, ch)
			}
		}
	}
	if n > 1 {
		if c.selects == nil {
			c.selects = map[sched.TaskID]int{}
		}
		c.selects[tid]++
		if !grown {
			h, grown = slices.Clone(h), true
		}
		h = append(h, SelectChoice{Task: s.TaskPath(tid), Select: c.selects[tid], Chose: key})
	}
	if settledBy != "" {
		if !grown {
			h, grown = slices.Clone(h), true
		}
		h = append(h, SelectChoice{Task: s.TaskPath(tid), Promise: key, Chose: settledBy})
	}
	if grown {
		c.set(tid, h)
	}
}

// set replaces a task's choices (slices are shared between tasks, and
// never appended to in place).
func (c *choices) set(tid sched.TaskID, h []SelectChoice) {
	if c.hist == nil {
		c.hist = map[sched.TaskID][]SelectChoice{}
	}
	c.hist[tid] = slices.Clip(h)
}
