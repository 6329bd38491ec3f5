package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/sched"
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
	// an activity that has neither returns JSON null.
	Activities map[string]Activity
	// StepTime bounds the virtual time a step body takes (uniform from 0);
	// default 100ms.
	StepTime time.Duration
	// ActivityTime bounds the virtual time an activity attempt takes
	// (uniform from 0); default 100ms.
	ActivityTime time.Duration
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
	return &simRun{seed: seed, clock: clock, ends: map[string]int64{}, ops: map[string]simOp{}}
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

// noteOp remembers what a key was issued as.
func (r *simRun) noteOp(key string, op simOp) {
	if _, ok := r.ops[key]; !ok {
		r.ops[key] = op
	}
}

// clone copies the parts of a run's simulated state that another run
// derived from it (a crash copy) starts from: seed, end times, ops.
func (r *simRun) clone(clock int64) *simRun {
	c := newSimRun(r.seed, clock)
	for k, v := range r.ends {
		c.ends[k] = v
	}
	return c
}

// simActivity runs a call op's activity at once, attempt after attempt as
// its retry policy says, and schedules its outcome after the virtual time
// the attempts and backoffs took.
func (x *exec) simActivity(key, name string, input []byte, opts abi.OpOptions, attempt int) {
	sim, cfg := x.rs.sim, x.h.sim.cfg
	fn := cfg.Activities[name]
	if fn == nil {
		fn = x.h.activity(name)
	}
	var total time.Duration
	var out []byte
	var err error
	for ; ; attempt++ {
		d := time.Duration(sim.frac(fmt.Sprintf("call:%s#%d", key, attempt)) * float64(cfg.ActivityTime))
		if t := time.Duration(opts.Timeout); t > 0 && d > t {
			total += t
			out, err = nil, fmt.Errorf("activity %q timed out after %s (attempt %d)", name, t, attempt)
		} else {
			total += d
			out, err = []byte("null"), nil
			if fn != nil {
				ctx := context.WithValue(context.Background(), activityInfoKey{}, ActivityInfo{RunID: x.rs.run.ID, Key: key, Attempt: attempt})
				out, err = runActivity(ctx, fn, input)
			}
		}
		if err == nil || !retryable(opts, err, attempt) {
			break
		}
		total += simBackoff(opts, attempt, sim.frac(fmt.Sprintf("backoff:%s#%d", key, attempt)))
	}
	c := sched.Completion{Key: key, Outcome: sched.Outcome{OK: true, Value: out}, Attempts: attempt}
	if err != nil {
		c.Outcome = sched.Outcome{Err: err.Error()}
	}
	sim.schedule("call:"+key, total, c)
}

// simBackoff is backoff with the jitter drawn from f in [0, 1).
func simBackoff(o abi.OpOptions, attempt int, f float64) time.Duration {
	j := o.Jitter
	o.Jitter = 0
	d := float64(backoff(o, attempt))
	if j > 0 {
		d *= 1 + float64(j)/1000*(2*f-1)
	}
	return time.Duration(d)
}

// simBodyID names the n-th wait of the current attempt of a task's step
// body.
func (x *exec) simBodyID(tid sched.TaskID, what string) string {
	key := x.s.BodyKey(tid)
	p := x.s.BodyPromise(tid)
	attempt := 0
	if p != 0 {
		attempt = x.s.Attempts(p)
	}
	base := fmt.Sprintf("%s:%s#%d", what, key, attempt)
	if x.simWaits == nil {
		x.simWaits = map[string]int{}
	}
	n := x.simWaits[base]
	x.simWaits[base]++
	return fmt.Sprintf("%s#%d", base, n)
}

// simRand is the real_rand stream of a step body in a simulation: seeded
// by the step's key and attempt, so a body run again after a crash draws
// the same bytes.
func (x *exec) simRand(tid sched.TaskID) *rand.ChaCha8 {
	key := x.s.BodyKey(tid)
	if x.simRands == nil {
		x.simRands = map[string]*rand.ChaCha8{}
	}
	p := x.s.BodyPromise(tid)
	id := fmt.Sprintf("%s#%d", key, x.s.Attempts(p))
	r := x.simRands[id]
	if r == nil {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], mix(x.rs.sim.seed, "rand:"+id))
		r = rand.NewChaCha8(seed)
		x.simRands[id] = r
	}
	return r
}

// simChild drives a child run to its end or suspension, at once and in
// its own virtual time, and schedules its outcome for the parent after
// the virtual time the child took. A child that suspends settles nothing.
func (x *exec) simChild(ctx context.Context, key string, child store.Run) {
	sim := x.rs.sim
	if !child.Status.Terminal() {
		x.h.sim.mu.Lock()
		if x.h.sim.runs[child.ID] == nil {
			x.h.sim.runs[child.ID] = newSimRun(mix(sim.seed, "child:"+key), child.StartTime)
		}
		x.h.sim.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			var err error
			if child, err = x.h.Drive(ctx, child.ID, DriveOptions{}); err != nil && !IsDivergence(err) {
				x.h.log.Warn("child run stopped", "run", x.rs.run.ID, "key", key, "child", child.ID, "err", err)
			}
		}()
		<-done
		if !child.Status.Terminal() {
			return
		}
	}
	took := time.Duration(0)
	if cs := x.h.sim.run(child.ID, child.StartTime); cs.clock > child.StartTime {
		took = time.Duration(cs.clock - child.StartTime)
	}
	sim.schedule("child:"+key, took, sched.Completion{Key: key, Outcome: childOutcome(child)})
}
