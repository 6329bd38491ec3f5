package exec

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

// SimConfig is host.Simulation (its fields and defaults documented there).
type SimConfig struct {
	Seed           uint64
	Activities     map[string]activity.Func
	StepTime       time.Duration
	ActivityTime   time.Duration
	Promises       map[string]PromiseValue
	SettlePromises bool
	PromiseTime    time.Duration
}

// simulator holds the simulated state of each run of a host.
type Simulator struct {
	Cfg  SimConfig
	Mu   sync.Mutex
	Runs map[string]*SimRun
}

func NewSimulator(cfg SimConfig) *Simulator {
	if cfg.StepTime <= 0 {
		cfg.StepTime = 100 * time.Millisecond
	}
	if cfg.ActivityTime <= 0 {
		cfg.ActivityTime = 100 * time.Millisecond
	}
	if cfg.PromiseTime <= 0 {
		cfg.PromiseTime = 100 * time.Millisecond
	}
	return &Simulator{Cfg: cfg, Runs: map[string]*SimRun{}}
}

// simRun is the simulated world of one run: its virtual clock, the events
// scheduled for it, the end time of every event it ever scheduled (kept
// across executions, and copied into the runs a checker derives from it),
// and the log of what its executions recorded.
type SimRun struct {
	seed  uint64
	Clock int64
	queue []simEvent
	ends  map[string]int64
	Log   []SimRecord
	Ops   map[string]SimOp
	// choices holds, per key, the recorded choices that could have shaped
	// the op when it was first issued (simchoice.go).
	Choices map[string][]SelectChoice
	// index is the schedule's number in a check (promise modes take turns
	// by it); promised says how each promise was settled, for the report
	// (checkpromise.go).
	Index    int
	Promised map[string]string
}

type simEvent struct {
	id  string
	end int64
	tie uint64
	c   sched.Completion
}

// simRecord is a record as an execution emitted it.
type SimRecord struct {
	Out store.Outcome
}

// simOp is what a key was issued as: its kind, function and the lineage
// path of the task that issued it.
type SimOp struct {
	Kind, Function, Task string
}

// run returns the simulated state of a run, making it if needed with the
// host's seed mixed with the run id and the clock at start.
func (s *Simulator) Run(id string, start int64) *SimRun {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	r := s.Runs[id]
	if r == nil {
		r = NewSimRun(Mix(s.Cfg.Seed, id), start)
		s.Runs[id] = r
	}
	return r
}

// preset installs the simulated state of a run before it is driven.
func (s *Simulator) Preset(id string, r *SimRun) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	s.Runs[id] = r
}

// drop forgets the simulated state of a run and of its child runs.
func (s *Simulator) Drop(id string) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	delete(s.Runs, id)
	for k := range s.Runs {
		if strings.HasPrefix(k, id+".") {
			delete(s.Runs, k)
		}
	}
}

func NewSimRun(seed uint64, clock int64) *SimRun {
	return &SimRun{seed: seed, Clock: clock, ends: map[string]int64{}, Ops: map[string]SimOp{}, Choices: map[string][]SelectChoice{}}
}

// mix hashes a seed with a label into a new seed.
func Mix(seed uint64, label string) uint64 {
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
func (r *SimRun) Frac(id string) float64 {
	return float64(Mix(r.seed, id)>>11) / (1 << 53)
}

// schedule adds an event that ends d after now, unless an earlier
// execution scheduled the same event: then it keeps that end time (or
// now, if that has passed).
func (r *SimRun) schedule(id string, d time.Duration, c sched.Completion) {
	end, ok := r.ends[id]
	if !ok {
		end = r.Clock + int64(max(d, 0))
		r.ends[id] = end
	}
	r.queue = append(r.queue, simEvent{id: id, end: max(end, r.Clock), tie: Mix(r.seed, "tie:"+id), c: c})
}

// at adds an event at an absolute virtual time (a timer's deadline).
func (r *SimRun) at(id string, end int64, c sched.Completion) {
	r.ends[id] = end
	r.queue = append(r.queue, simEvent{id: id, end: max(end, r.Clock), tie: Mix(r.seed, "tie:"+id), c: c})
}

// fire advances the clock to the earliest scheduled events and hands all
// those due then to the mailbox, in seeded order. It reports false when
// nothing is scheduled.
func (r *SimRun) fire(mb *mailbox) bool {
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
		mb.Put(r.queue[n].c)
		n++
	}
	r.queue = append(r.queue[:0], r.queue[n:]...)
	r.Clock = max(r.Clock, end)
	return true
}

// noteOp remembers what a key was issued as, and after which choices.
func (r *SimRun) noteOp(key string, op SimOp, cs []SelectChoice) {
	if _, ok := r.Ops[key]; !ok {
		r.Ops[key] = op
		if len(cs) > 0 {
			r.Choices[key] = cs
		}
	}
}

// clone copies the parts of a run's simulated state that another run
// derived from it (a crash copy) starts from: seed, end times, ops.
func (r *SimRun) Clone(clock int64) *SimRun {
	c := NewSimRun(r.seed, clock)
	c.Index = r.Index
	for k, v := range r.ends {
		c.ends[k] = v
	}
	return c
}
