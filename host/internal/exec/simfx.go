package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// simWorld is the world of a run under Config.Simulation (sim.go): its
// simulated state, kept across executions.
type SimWorld struct {
	Run *SimRun
	Cfg SimConfig
}

func (w SimWorld) SettlesParent() bool { return false }

func (w SimWorld) ArmDeadline(h Host, rs *RunState) bool {
	w.Run.at("deadline", rs.Run.Deadline, sched.Completion{Key: sched.CancelKey, Outcome: sched.Outcome{Err: TimeoutReason(rs.Run)}})
	return true
}

func (w SimWorld) effects(x *Exec) effects {
	return &simEffects{x: x, sim: w.Run, cfg: w.Cfg}
}

// simEffects are the effects of an execution in a simulation: nothing
// waits in real time; every step body, body wait, activity attempt and
// child run takes a seeded virtual duration, and timers fire at their
// deadline of virtual time.
type simEffects struct {
	x   *Exec
	sim *SimRun
	cfg SimConfig

	choices choices // the choices that shaped each task (simchoice.go)

	waits  map[string]int           // waits issued per step body attempt
	rands  map[string]*rand.ChaCha8 // real_rand streams per step body attempt
	starts map[string]int64         // clock when each step body attempt started in this execution
}

func (f *simEffects) now() int64 { return f.sim.Clock }
func (f *simEffects) recorded(o store.Outcome, r sched.Record) {
	f.sim.Log = append(f.sim.Log, SimRecord{Out: o})
	f.x.h.EmitRecord(f.x.rs.Run, r)
}
func (f *simEffects) commits() bool { return true }
func (f *simEffects) unsettled(abi.OpKind, string, sched.OpResult, bool) (opAction, error) {
	return opGo, nil
}
func (f *simEffects) issued(key, kind, fn string, tid sched.TaskID) {
	f.sim.noteOp(key, SimOp{Kind: kind, Function: fn, Task: f.x.S.TaskPath(tid)}, f.choices.of(tid))
}
func (f *simEffects) spawned(parent, child sched.TaskID) { f.choices.spawned(parent, child) }
func (f *simEffects) observed(tid sched.TaskID, p sched.PromiseID, n int) {
	key, _ := f.x.S.PromiseOf(p)
	f.choices.observed(f.x.S, tid, p, n, f.sim.Promised[key])
}
func (f *simEffects) hardCancels() bool { return false }

// bodyStarted notes when an attempt of a step body starts: the first
// time in any execution (kept across crashes) and in this one.
func (f *simEffects) bodyStarted(key string, attempt int) {
	id := fmt.Sprintf("%s#%d", key, attempt)
	if _, ok := f.sim.ends["start:"+id]; !ok {
		f.sim.ends["start:"+id] = f.sim.Clock
	}
	if f.starts == nil {
		f.starts = map[string]int64{}
	}
	f.starts[id] = f.sim.Clock
}

// bodyNow is the body's virtual time, counted from the first start of
// this attempt, so a body run again after a crash reads the same.
func (f *simEffects) bodyNow() int64 {
	s := f.x.S
	tid := s.Current()
	id := fmt.Sprintf("%s#%d", s.BodyKey(tid), s.Attempts(s.BodyPromise(tid)))
	return f.sim.ends["start:"+id] + f.sim.Clock - f.starts[id]
}

// bodyRand reads the real_rand stream of the running step body: seeded
// by the step's key and attempt, so a body run again after a crash draws
// the same bytes.
func (f *simEffects) bodyRand(b []byte) {
	s := f.x.S
	tid := s.Current()
	id := fmt.Sprintf("%s#%d", s.BodyKey(tid), s.Attempts(s.BodyPromise(tid)))
	if f.rands == nil {
		f.rands = map[string]*rand.ChaCha8{}
	}
	r := f.rands[id]
	if r == nil {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], Mix(f.sim.seed, "rand:"+id))
		r = rand.NewChaCha8(seed)
		f.rands[id] = r
	}
	r.Read(b)
}

// bodyWait schedules the end of a wait in a step body after a seeded
// virtual duration: a body_sleep takes uniform [0, 2d), a backoff d.
func (f *simEffects) bodyWait(tid sched.TaskID, d time.Duration, what string) {
	id := f.bodyWaitID(tid, what)
	if what == "body" {
		d = time.Duration(f.sim.Frac(id) * 2 * float64(d))
	}
	f.x.rs.bodyWaits++
	f.sim.schedule(id, d, sched.Completion{Task: tid})
}

// bodyWaitID names the n-th wait of the current attempt of a task's
// step body.
func (f *simEffects) bodyWaitID(tid sched.TaskID, what string) string {
	s := f.x.S
	attempt := 0
	if p := s.BodyPromise(tid); p != 0 {
		attempt = s.Attempts(p)
	}
	base := fmt.Sprintf("%s:%s#%d", what, s.BodyKey(tid), attempt)
	if f.waits == nil {
		f.waits = map[string]int{}
	}
	n := f.waits[base]
	f.waits[base]++
	return fmt.Sprintf("%s#%d", base, n)
}

func (f *simEffects) backoff(b *stepBody, key string, attempt int) time.Duration {
	return simBackoff(b.opts, attempt-1, f.sim.Frac(fmt.Sprintf("backoff:%s#%d", key, attempt)))
}

// stepEnded delivers every step body's outcome like a held one, after a
// seeded duration: in a simulation every step body takes time.
func (f *simEffects) stepEnded(tid sched.TaskID, p sched.PromiseID, out sched.Outcome) (bool, error) {
	s := f.x.S
	if s.BodyWaited(tid) {
		return false, nil
	}
	key := s.BodyKey(tid)
	id := fmt.Sprintf("step:%s#%d", key, s.Attempts(p))
	if err := s.StepDefer(tid, p); err != nil {
		return true, err
	}
	f.sim.schedule(id, time.Duration(f.sim.Frac(id)*float64(f.cfg.StepTime)), sched.Completion{Key: key, Outcome: out})
	return true, nil
}

// armTimer schedules a durable timer's firing at its deadline.
func (f *simEffects) armTimer(key string, deadline int64) {
	rs := f.x.rs
	if _, ok := rs.timers[key]; ok {
		return
	}
	rs.timers[key] = deadline
	f.sim.at("timer:"+key, deadline, sched.Completion{Key: key, Outcome: sched.Outcome{OK: true, Value: []byte("null")}})
}

// call runs a call op's activity at once (a fake of
// Simulation.Activities, else the registered one, else JSON null; the HTTP
// activity fails unless faked),
// attempt after attempt as its retry policy says, and schedules its
// outcome after the virtual time the attempts and backoffs took.
func (f *simEffects) call(c activityCall) error {
	fn := f.cfg.Activities[c.name]
	if fn == nil {
		fn = f.x.h.SimActivity(c.name) // httpactivity.go
	}
	var total time.Duration
	var out []byte
	var err error
	attempt := c.attempt
	for ; ; attempt++ {
		d := time.Duration(f.sim.Frac(fmt.Sprintf("call:%s#%d", c.key, attempt)) * float64(f.cfg.ActivityTime))
		if t := time.Duration(c.opts.Timeout); t > 0 && d > t {
			total += t
			out, err = nil, fmt.Errorf("activity %q timed out after %s (attempt %d)", c.name, t, attempt)
		} else {
			total += d
			out, err = []byte("null"), nil
			if fn != nil {
				ctx := activity.WithInfo(context.Background(), callInfo(f.x.rs.Run.ID, c, attempt))
				out, err = runActivity(ctx, fn, c.input)
			}
		}
		if err == nil || !Retryable(c.opts, err, attempt) {
			break
		}
		total += simBackoff(c.opts, attempt, f.sim.Frac(fmt.Sprintf("backoff:%s#%d", c.key, attempt)))
	}
	done := sched.Completion{Key: c.key, Outcome: sched.Outcome{OK: true, Value: out}, Attempts: attempt}
	if err != nil {
		done.Outcome = errOutcome(err.Error())
	}
	f.sim.schedule("call:"+c.key, total, done)
	return nil
}

// prepareChild starts a child run at the parent's virtual time, with its
// seed.
func (f *simEffects) prepareChild(r *store.Run) {
	r.StartTime, r.Seed = f.sim.Clock, f.x.rs.Run.Seed
}

// simBackoff is backoff with the jitter drawn from r in [0, 1).
func simBackoff(o abi.OpOptions, attempt int, r float64) time.Duration {
	j := o.Jitter
	o.Jitter = 0
	d := float64(Backoff(o, attempt))
	if j > 0 {
		d *= 1 + float64(j)/1000*(2*r-1)
	}
	return time.Duration(d)
}

// child drives a child run to its end or suspension, at once and in its
// own virtual time, and schedules its outcome for the parent after the
// virtual time the child took. A child that suspends settles nothing.
func (f *simEffects) child(ctx context.Context, key string, child store.Run) {
	x := f.x
	sims := x.h.Simulator()
	if !child.Status.Terminal() {
		sims.Mu.Lock()
		if sims.Runs[child.ID] == nil {
			cs := NewSimRun(Mix(f.sim.seed, "child:"+key), child.StartTime)
			cs.Index = f.sim.Index
			sims.Runs[child.ID] = cs
		}
		sims.Mu.Unlock()
		done := make(chan struct{})
		go func() { // on a goroutine of its own, as every drive
			defer close(done)
			var err error
			if child, err = x.h.Drive(ctx, child.ID); err != nil && !IsDivergence(err) {
				x.h.Log().Warn("child run stopped", "run", x.rs.Run.ID, "key", key, "child", child.ID, "err", err)
			}
		}()
		<-done
		if !child.Status.Terminal() {
			return
		}
	}
	took := time.Duration(0)
	cs := sims.Run(child.ID, child.StartTime)
	if cs.Clock > child.StartTime {
		took = time.Duration(cs.Clock - child.StartTime)
	}
	for k, how := range cs.Promised { // the child's promises, for the report
		f.sim.notePromise(key+"/"+k, how)
	}
	f.sim.schedule("child:"+key, took, sched.Completion{Key: key, Outcome: ChildOutcome(child)})
}

// cancelChild requests the cancellation without waiting for it: the
// child is driven in its own virtual time.
func (f *simEffects) cancelChild(ctx context.Context, key, id, reason string) {
	x := f.x
	go func() {
		if _, err := x.h.Cancel(context.WithoutCancel(ctx), id, reason); err != nil && !errors.Is(err, ErrTerminal) {
			x.h.Log().Warn("cancel child run", "run", x.rs.Run.ID, "key", key, "child", id, "err", err)
		}
	}()
}

// idle fires the next scheduled events; with none, the run suspends if
// a promise or child can still settle it, else it is deadlocked.
func (f *simEffects) idle(ctx context.Context) error {
	x, rs := f.x, f.x.rs
	if rs.MB.Len() > 0 || f.sim.fire(&rs.MB) {
		return nil
	}
	if len(rs.promises) > 0 || len(rs.children) > 0 {
		return x.suspend(0)
	}
	return x.fail(errDeadlock)
}
