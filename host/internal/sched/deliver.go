package sched

import (
	"fmt"
	"strings"
)

// Dispatching tasks and delivering completions: the replay rounds, the
// live idle points, the cancellation.

// Dispatch says which task runs next.
type Dispatch struct {
	Task    TaskID
	Start   bool      // first run of the task
	Promise PromiseID // the promise that woke it (0 for a start or a body wake)
	Outcome Outcome
}

// Next pops the ready queue. ok is false at an idle point: every task
// waits, and the host must deliver completions (DeliverRound or
// DeliverLive) before calling Next again.
func (s *Sched) Next() (Dispatch, bool) {
	if s.current != 0 {
		// The running task yielded without waiting (the host checks this
		// first and fails the run); keep the state consistent.
		s.push(s.tasks[s.current-1])
		s.current = 0
	}
	for s.head < len(s.ready) {
		id := s.ready[s.head]
		s.head++
		t := s.tasks[id-1]
		if t.state != taskReady {
			continue
		}
		if s.head > 1024 && s.head*2 > len(s.ready) {
			s.ready = append(s.ready[:0], s.ready[s.head:]...)
			s.head = 0
		}
		t.state = taskRunning
		s.current = id
		d := Dispatch{Task: id, Start: !t.started}
		t.started = true
		if !d.Start && t.wakeBy != 0 {
			d.Promise = t.wakeBy
			d.Outcome = s.promises[t.wakeBy-1].out
		}
		t.wakeBy = 0
		return d, true
	}
	s.ready, s.head = s.ready[:0], 0
	return Dispatch{}, false
}

// DeliverRound delivers the next recorded idle point of the journal while
// replaying. It fails with a NondeterminismError when the replay cannot
// deliver it: an op the journal expects before the idle point was never
// issued, or a recorded settlement has no promise in this replay.
func (s *Sched) DeliverRound() error {
	var next *Record
	for {
		next = s.nextPending()
		if next == nil {
			return nil
		}
		if next.Waited && !s.opts.ReplayInline {
			break
		}
		if Named(next.Key) && !s.Issued(next.Key) {
			s.finish(next) // orphaned: a named op the code no longer reaches
			continue
		}
		return &NondeterminismError{Seq: next.Seq,
			Expected: fmt.Sprintf("%s %q (key %q) to be issued", next.Kind, next.Function, next.Key),
			Got:      "every task blocked before issuing it"}
	}
	for _, rec := range s.rounds[next.Idle] {
		if s.done[s.index[rec]] {
			continue
		}
		if rec.Key == CancelKey {
			s.canceled, s.reason = true, strings.TrimPrefix(rec.Outcome.Err, CanceledPrefix)
			s.replayed(rec)
			continue
		}
		id, ok := s.byKey[rec.Key]
		if !ok {
			if Named(rec.Key) {
				s.finish(rec)
				continue
			}
			return &NondeterminismError{Seq: rec.Seq,
				Expected: fmt.Sprintf("settlement of %s %q at key %q", rec.Kind, rec.Function, rec.Key),
				Got:      "no op with that key was issued by this replay"}
		}
		p := s.promises[id-1]
		if p.settled || !p.inRound {
			return &NondeterminismError{Seq: rec.Seq, Expected: fmt.Sprintf("key %q waiting for idle point %d", rec.Key, rec.Idle), Got: "it was settled already"}
		}
		if err := s.checkOrder(rec); err != nil {
			return err
		}
		s.settle(id, p, rec.Outcome, rec)
	}
	s.idle = next.Idle
	return nil
}

// Completion is something that finished outside the guest: a durable
// outcome (Key set) or the end of a wait inside a step body (Task set).
type Completion struct {
	Key     string
	Outcome Outcome
	Task    TaskID // body wake
	// Attempts, if set, is the number of executions an activity took.
	Attempts int
}

// DeliverLive runs a live idle point: held step outcomes first, then the
// completions in arrival order. Durable outcomes are recorded as
// waited-for at this idle point with their wake order. A completion for
// a key this execution has not issued (or already settled) is returned
// in stale; the host decides (it may belong to an op the replay has not
// reached yet).
func (s *Sched) DeliverLive(cs []Completion) (stale []Completion) {
	idle := s.idle + 1
	wake := 0
	deliver := func(id PromiseID, out Outcome) {
		p := s.promises[id-1]
		s.settleAs(id, p, out, nil, true, idle, wake)
		wake++
	}
	for _, h := range s.held {
		deliver(h.p, h.out)
	}
	s.held = s.held[:0]
	for _, c := range cs {
		if c.Task != 0 {
			if t, err := s.task(c.Task); err == nil && t.state == taskWaiting && t.body != 0 {
				t.wakeBy = 0
				s.push(t)
			}
			continue
		}
		if c.Key == CancelKey {
			if !s.canceled {
				s.cancel(c.Outcome.Err, idle, &wake)
			}
			continue
		}
		id, ok := s.byKey[c.Key]
		if !ok {
			stale = append(stale, c)
			continue
		}
		if s.promises[id-1].settled {
			continue // delivered already (a settlement seen twice)
		}
		if c.Attempts > 0 {
			s.promises[id-1].attempts = c.Attempts
		}
		deliver(id, c.Outcome)
	}
	if wake > 0 {
		s.idle = idle
	}
	return stale
}

// cancel delivers the run's cancellation at a live idle point: it
// records it at CancelKey, then fails every pending sleep and promise.
func (s *Sched) cancel(reason string, idle int64, wake *int) {
	s.canceled, s.reason = true, reason
	now := s.opts.Now()
	if now > s.vnow {
		s.vnow = now
	}
	s.nextSeq++
	if s.Replaying() {
		s.shifted = true
	}
	if s.opts.OnRecord != nil {
		s.opts.OnRecord(Record{Key: CancelKey, Kind: "cancel", Function: "cancel", Outcome: Outcome{Err: CanceledPrefix + reason},
			Seq: s.nextSeq, Waited: true, Idle: idle, WakeOrder: *wake, VTime: s.vnow})
	}
	*wake++
	for i, p := range s.promises {
		if p.durable && !p.settled && p.rec == nil && cancelable(p.kind) {
			s.settleAs(PromiseID(i+1), p, Outcome{Err: CanceledPrefix + reason}, nil, true, idle, *wake)
			*wake++
		}
	}
}

// Canceled reports whether the run's cancellation has been delivered in
// this execution, and its reason.
func (s *Sched) Canceled() (bool, string) { return s.canceled, s.reason }

// Pending lists the keys of issued durable ops of a kind that have not
// settled, in issue order.
func (s *Sched) Pending(kind string) []string {
	var keys []string
	for _, p := range s.promises {
		if p.durable && !p.settled && p.kind == kind {
			keys = append(keys, p.key)
		}
	}
	return keys
}
