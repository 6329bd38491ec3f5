package sched

import (
	"fmt"
	"strconv"

	"github.com/skeinrun/skein/internal/lineage"
)

// The ops a task issues: steps, calls, sleeps, promises and children
// (Op), tasks and branches (Spawn, Fork, Branch), and how each settles
// or replays.

// OpResult says what the guest does after issuing an op.
type OpResult struct {
	Promise PromiseID
	Key     string
	// Settled: the outcome is known now (Outcome holds it).
	Settled bool
	Outcome Outcome
	// RunBody: a step not recorded; run its body and call StepDone.
	RunBody bool
	// New: the op has no record; the host starts it (timer, activity, …).
	New bool
	// Pending is the pending record of an op issued earlier (timer
	// deadline), for the host to re-arm.
	Pending *Record
	// Attempts is the number of body executions recorded so far.
	Attempts int
}

func (s *Sched) mint(t *task, name string) (string, error) {
	if s.opts.Minting == MintCounter {
		s.counter++
		return strconv.Itoa(s.counter), nil
	}
	return t.scope.Op(name)
}

// Op issues a durable op (step, call, sleep, promise, child) from the
// running task. An id error (*lineage.StepIDError) issues nothing.
func (s *Sched) Op(tid TaskID, kind, name, fn string) (OpResult, error) {
	return s.op(tid, kind, name, fn, "")
}

// OpFed issues, as Op would, the unnamed op that f was fed for (Feed).
func (s *Sched) OpFed(tid TaskID, f Fed) (OpResult, error) {
	return s.op(tid, f.Rec.Kind, "", f.Rec.Function, f.Rec.Key)
}

// op issues a durable op. fed is the key of the op's record when a feed
// told it ahead ("" otherwise): if it is the key of the task's next
// position, it is used as it is, not minted again.
func (s *Sched) op(tid TaskID, kind, name, fn, fed string) (OpResult, error) {
	t, err := s.running(tid)
	if err != nil {
		return OpResult{}, err
	}
	if t.body != 0 {
		return OpResult{}, misuse("task %d issued a %s op inside the body of step %q: step bodies must not issue durable ops", tid, kind, s.promises[t.body-1].key)
	}
	var key string
	if fed != "" && name == "" && s.opts.Minting == MintLineage && t.scope.Next(fed) {
		key = fed // a position not used before: no other op has its key
	} else {
		if key, err = s.mint(t, name); err != nil {
			return OpResult{}, err
		}
		if _, dup := s.byKey[key]; dup {
			// Only possible with MintCounter or a lineage bug.
			return OpResult{}, misuse("key %q issued twice", key)
		}
	}
	p := s.allocPromise()
	*p = promise{key: key, kind: kind, fn: fn, durable: true, owner: tid}
	id := s.newPromise(p)
	s.byKey[key] = id
	res := OpResult{Promise: id, Key: key}
	rec := s.recorded(key)
	if rec == nil {
		if s.canceled && (cancelable(kind) || kind == "child") {
			out := Outcome{Err: CanceledPrefix + s.reason}
			s.settle(id, p, out, nil)
			res.Settled, res.Outcome = true, out
			return res, nil
		}
		res.New = true
		if kind == "call" {
			p.attempts = 1
			res.Attempts = 1
		}
		if kind == "step" {
			res.RunBody = true
			t.body = id
			t.bodyWaited = false
			s.bodies++
			p.attempts = 1
			res.Attempts = 1
		}
		return res, nil
	}
	if rec.Function != fn && !s.opts.ReplayInline {
		return OpResult{}, &CodeMismatchError{Key: key, Recorded: rec.Function, Got: fn}
	}
	if rec.Kind != kind && !s.opts.ReplayInline {
		return OpResult{}, &NondeterminismError{Seq: rec.Seq, Expected: fmt.Sprintf("a %s op at key %q", rec.Kind, key), Got: fmt.Sprintf("a %s op", kind)}
	}
	p.attempts = rec.Attempts
	res.Attempts = rec.Attempts
	if rec.Pending {
		p.deadline = rec.Deadline
		if kind == "step" && !s.opts.LeavePendingSteps { // its body ran without settling (RecordUnsettledSteps): run it again
			res.New, res.RunBody = true, true
			t.body, t.bodyWaited = id, false
			s.bodies++
			p.attempts++
			res.Attempts = p.attempts
			return res, nil
		}
		res.Pending = rec
		return res, nil
	}
	if rec.Waited && !s.opts.ReplayInline {
		p.rec, p.inRound = rec, true
		return res, nil
	}
	if err := s.checkOrder(rec); err != nil {
		return OpResult{}, err
	}
	s.settle(id, p, rec.Outcome, rec)
	res.Settled, res.Outcome = true, rec.Outcome
	return res, nil
}

// recorded returns the journal's record of key, nil if none.
func (s *Sched) recorded(key string) *Record {
	if i, ok := s.nextPositional(); ok && !s.dupKeys && s.settled[i].Key == key {
		return s.settled[i]
	}
	return s.journal[key]
}

// checkOrder verifies that recorded positional settlements are delivered
// in their recorded order: none is skipped, none comes early. Named ones
// are exempt, since a new version of the code may move or drop them.
func (s *Sched) checkOrder(rec *Record) error {
	if s.opts.ReplayInline || Named(rec.Key) {
		return nil
	}
	if rec.Seq <= s.lastPos {
		return &NondeterminismError{Seq: rec.Seq, Expected: fmt.Sprintf("key %q to settle before tick %d", rec.Key, s.lastPos), Got: "it settled after"}
	}
	if i, ok := s.nextPositional(); ok {
		if want := s.settled[i]; want != rec && !want.Waited {
			return &NondeterminismError{Seq: want.Seq, Expected: fmt.Sprintf("%s %q (key %q) to be issued next", want.Kind, want.Function, want.Key), Got: fmt.Sprintf("key %q (tick %d)", rec.Key, rec.Seq)}
		}
	}
	s.lastPos = rec.Seq
	return nil
}

// settle settles a promise. rec is the recorded settlement on replay, nil
// for a live one (which is then recorded).
func (s *Sched) settle(id PromiseID, p *promise, out Outcome, rec *Record) {
	s.settleAs(id, p, out, rec, false, 0, 0)
}

func (s *Sched) settleAs(id PromiseID, p *promise, out Outcome, rec *Record, waited bool, idle int64, wake int) {
	p.settled, p.out = true, out
	s.evt++
	p.evt = s.evt
	if p.durable {
		s.order = append(s.order, id)
		if rec != nil {
			s.replayed(rec)
		} else {
			if s.Replaying() {
				s.shifted = true
			}
			now := s.opts.Now()
			if now > s.vnow {
				s.vnow = now
			}
			s.nextSeq++
			r := Record{Key: p.key, Kind: p.kind, Function: p.fn, Outcome: out, Seq: s.nextSeq,
				Waited: waited, Idle: idle, WakeOrder: wake, VTime: s.vnow, Attempts: p.attempts, Deadline: p.deadline}
			if s.opts.OnRecord != nil {
				s.opts.OnRecord(r)
			}
		}
	}
	for _, w := range p.waiters {
		t := s.tasks[w.task-1]
		if t.state == taskWaiting && t.waitGen == w.gen {
			t.wakeBy = id
			s.push(t)
		}
	}
	p.waiters = nil
}

// replayed marks a recorded settlement delivered: the virtual clock
// moves to it, and after a new outcome in this replay it is recorded
// again with the next sequence number, to keep the journal in this
// execution's settle order.
func (s *Sched) replayed(rec *Record) {
	s.finish(rec)
	if rec.VTime > s.vnow {
		s.vnow = rec.VTime
	}
	if s.shifted {
		s.nextSeq++
		r := *rec
		r.Seq = s.nextSeq
		if s.opts.OnRecord != nil {
			s.opts.OnRecord(r)
		}
	}
}

// SettleNow settles the new durable op id with out at once, inline: an
// op the host answers itself (attrs), recorded like a step settled
// inline.
func (s *Sched) SettleNow(id PromiseID, out Outcome) {
	s.settle(id, s.promises[id-1], out, nil)
}

// RecordPending records a newly issued op that stays pending (a timer
// with its deadline, a promise), so a resumed run finds it.
func (s *Sched) RecordPending(id PromiseID, deadline int64) {
	p := s.promises[id-1]
	p.deadline = deadline
	r := Record{Key: p.key, Kind: p.kind, Function: p.fn, Pending: true, Deadline: deadline, Attempts: p.attempts}
	if s.opts.OnRecord != nil {
		s.opts.OnRecord(r)
	}
}

// RecordUnsettledSteps records as pending every step this execution
// issued that has not settled: its body still runs, or its outcome waits
// to be delivered. The host calls it when the run ends with such steps in
// flight (a task that lost a select), so that the journal of an ended run
// holds every durable op the run issued (docs/design.md, "The journal of
// an ended run"), and a verifying replay that issues them finds them.
func (s *Sched) RecordUnsettledSteps() {
	for _, p := range s.promises {
		if p.durable && !p.settled && p.kind == "step" && s.opts.OnRecord != nil {
			s.opts.OnRecord(Record{Key: p.key, Kind: p.kind, Function: p.fn, Pending: true, Attempts: p.attempts})
		}
	}
}

// Spawn starts a task (skein.Go) from the running task. It returns the
// task's handle and its join promise.
func (s *Sched) Spawn(tid TaskID, name string) (TaskID, PromiseID, string, error) {
	t, err := s.running(tid)
	if err != nil {
		return 0, 0, "", err
	}
	if t.body != 0 {
		return 0, 0, "", misuse("task %d spawned a task inside a step body", tid)
	}
	var scope *lineage.Scope
	if s.opts.Minting == MintCounter {
		path, err := t.path.Spawn(name)
		if err != nil {
			return 0, 0, "", err
		}
		c := s.newTask(lineage.Root()) // every op of every task shares the counter
		c.path = path
		return c.id, c.join, path.Key(), nil
	} else if scope, err = t.scope.Spawn(name); err != nil {
		return 0, 0, "", err
	}
	c := s.newTask(scope)
	return c.id, c.join, scope.Key(), nil
}

// Fork opens a parallel fork in the running task and returns its handle
// (an index private to the task) and key.
func (s *Sched) Fork(tid TaskID, name string) (uint32, string, error) {
	t, err := s.running(tid)
	if err != nil {
		return 0, "", err
	}
	if t.body != 0 {
		return 0, "", misuse("task %d opened a fork inside a step body", tid)
	}
	f, err := t.scope.Fork(name)
	if err != nil {
		return 0, "", err
	}
	t.forks = append(t.forks, f)
	t.branches = append(t.branches, 0)
	return uint32(len(t.forks)), f.Key(), nil
}

// Branch spawns the next branch task of fork f of the running task.
func (s *Sched) Branch(tid TaskID, f uint32) (TaskID, PromiseID, string, error) {
	t, err := s.running(tid)
	if err != nil {
		return 0, 0, "", err
	}
	if t.body != 0 {
		return 0, 0, "", misuse("task %d started a branch inside a step body", tid)
	}
	if f == 0 || int(f) > len(t.forks) {
		return 0, 0, "", misuse("task %d: unknown fork handle %d", tid, f)
	}
	i := t.branches[f-1]
	t.branches[f-1]++
	scope := t.forks[f-1].Branch(i)
	c := s.newTask(scope)
	return c.id, c.join, scope.Key(), nil
}
