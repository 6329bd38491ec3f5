package host

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// Simulation makes a host run workflows in virtual time only, with every
// source of timing decided by a seed: what `skein check` and package
// skeintest run workflows under.
//
// Nothing waits in real time. Durable timers fire at their deadline of
// virtual time; each activity call, each step body and each wait inside a
// step body takes a seeded virtual duration; when several outcomes are due
// at the same virtual instant, the seed orders them. Outcomes are
// delivered one virtual instant at a time, in order, so one seed gives one
// schedule, exactly, every time. A crash is invisible in virtual time: an
// op that an earlier execution of the run already started keeps the end
// time it had, so a run replayed from any point of its journal must go on
// exactly as it did.
type Simulation struct {
	// Seed chooses the schedule of runs whose own seed was not set.
	Seed uint64
	// Activities are fakes by name, used instead of registered activities;
	// an activity that has neither returns JSON null. The HTTP activity
	// (activity.HTTPActivity) makes no requests here: unless faked, it fails.
	Activities map[string]activity.Func
	// StepTime bounds the virtual time a step body takes (uniform from 0);
	// default 100ms.
	StepTime time.Duration
	// ActivityTime bounds the virtual time an activity attempt takes
	// (uniform from 0); default 100ms.
	ActivityTime time.Duration
	// Promises settle the external promises at these keys (the part of
	// a promise's full id after "{run}.") with a fixed outcome, after a
	// seeded virtual delay. SettlePromises settles the others too, as a
	// check does (host/checkpromise.go): by schedule, with a value
	// generated from the promise's schema, with an error, or not at all.
	// Otherwise a promise waits for a Resolve from outside.
	Promises       map[string]PromiseValue
	SettlePromises bool
	// PromiseTime bounds the virtual delay before the simulation settles
	// a promise (uniform from 0); default 100ms.
	PromiseTime time.Duration
}

// simulator holds the simulated state of each run of a host.
type simulator struct {
	cfg  Simulation
	mu   sync.Mutex
	runs map[string]*simRun
}

func newSimulator(cfg Simulation) *simulator {
	if cfg.StepTime <= 0 {
		cfg.StepTime = 100 * time.Millisecond
	}
	if cfg.ActivityTime <= 0 {
		cfg.ActivityTime = 100 * time.Millisecond
	}
	if cfg.PromiseTime <= 0 {
		cfg.PromiseTime = 100 * time.Millisecond
	}
	return &simulator{cfg: cfg, runs: map[string]*simRun{}}
}

// simRun is the simulated world of one run: its virtual clock, the events
// scheduled for it, the end time of every event it ever scheduled (kept
// across executions, and copied into the runs a checker derives from it),
// and the log of what its executions recorded.
type simRun struct {
	seed  uint64
	clock int64
	queue []simEvent
	ends  map[string]int64
	log   []simRecord
	ops   map[string]simOp
	// choices holds, per key, the recorded choices that could have shaped
	// the op when it was first issued (simchoice.go).
	choices map[string][]choice
	// index is the schedule's number in a check (promise modes take turns
	// by it); promised says how each promise was settled, for the report
	// (checkpromise.go).
	index    int
	promised map[string]string
}

type simEvent struct {
	id  string
	end int64
	tie uint64
	c   sched.Completion
}

// simRecord is a record as an execution emitted it.
type simRecord struct {
	out store.Outcome
}

// simOp is what a key was issued as: its kind, function and the lineage
// path of the task that issued it.
type simOp struct {
	Kind, Function, Task string
}

// run returns the simulated state of a run, making it if needed with the
// host's seed mixed with the run id and the clock at start.
func (s *simulator) run(id string, start int64) *simRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[id]
	if r == nil {
		r = newSimRun(mix(s.cfg.Seed, id), start)
		s.runs[id] = r
	}
	return r
}

// preset installs the simulated state of a run before it is driven.
func (s *simulator) preset(id string, r *simRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[id] = r
}

// drop forgets the simulated state of a run and of its child runs.
func (s *simulator) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.runs, id)
	for k := range s.runs {
		if strings.HasPrefix(k, id+".") {
			delete(s.runs, k)
		}
	}
}

func newSimRun(seed uint64, clock int64) *simRun {
	return &simRun{seed: seed, clock: clock, ends: map[string]int64{}, ops: map[string]simOp{}, choices: map[string][]choice{}}
}

// mix hashes a seed with a label into a new seed.
func mix(seed uint64, label string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(label))
	return splitmix(h.Sum64())
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// frac returns a seeded number in [0, 1) for an event.
func (r *simRun) frac(id string) float64 {
	return float64(mix(r.seed, id)>>11) / (1 << 53)
}

// schedule adds an event that ends d after now, unless an earlier
// execution scheduled the same event: then it keeps that end time (or
// now, if that has passed).
func (r *simRun) schedule(id string, d time.Duration, c sched.Completion) {
	end, ok := r.ends[id]
	if !ok {
		end = r.clock + int64(max(d, 0))
		r.ends[id] = end
	}
	r.queue = append(r.queue, simEvent{id: id, end: max(end, r.clock), tie: mix(r.seed, "tie:"+id), c: c})
}

// at adds an event at an absolute virtual time (a timer's deadline).
func (r *simRun) at(id string, end int64, c sched.Completion) {
	r.ends[id] = end
	r.queue = append(r.queue, simEvent{id: id, end: max(end, r.clock), tie: mix(r.seed, "tie:"+id), c: c})
}

// fire advances the clock to the earliest scheduled events and hands all
// those due then to the mailbox, in seeded order. It reports false when
// nothing is scheduled.
func (r *simRun) fire(mb *mailbox) bool {
	if len(r.queue) == 0 {
		return false
	}
	sort.Slice(r.queue, func(i, j int) bool {
		a, b := r.queue[i], r.queue[j]
		if a.end != b.end {
			return a.end < b.end
		}
		return a.tie < b.tie
	})
	end := r.queue[0].end
	n := 0
	for n < len(r.queue) && r.queue[n].end == end {
		mb.put(r.queue[n].c)
		n++
	}
	r.queue = append(r.queue[:0], r.queue[n:]...)
	r.clock = max(r.clock, end)
	return true
}

// noteOp remembers what a key was issued as, and after which choices.
func (r *simRun) noteOp(key string, op simOp, cs []choice) {
	if _, ok := r.ops[key]; !ok {
		r.ops[key] = op
		if len(cs) > 0 {
			r.choices[key] = cs
		}
	}
}

// clone copies the parts of a run's simulated state that another run
// derived from it (a crash copy) starts from: seed, end times, ops.
func (r *simRun) clone(clock int64) *simRun {
	c := newSimRun(r.seed, clock)
	c.index = r.index
	for k, v := range r.ends {
		c.ends[k] = v
	}
	return c
}
