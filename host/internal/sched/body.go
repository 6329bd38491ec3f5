package sched

// Step bodies as the host sees them: retries, deferred outcomes,
// attempts, and what a run has issued and settled.

// StepRetry records that the body of step p failed and runs again: the
// attempt count goes up and is recorded (pending), and the task waits in
// its body (the backoff) until the host wakes it with a body completion.
func (s *Sched) StepRetry(tid TaskID, id PromiseID) (attempts int, err error) {
	t, err := s.running(tid)
	if err != nil {
		return 0, err
	}
	if t.body == 0 || t.body != id {
		return 0, misuse("task %d retried step promise %d, but it is not running that step's body", tid, id)
	}
	p := s.promises[id-1]
	p.attempts++
	if s.opts.OnRecord != nil {
		s.opts.OnRecord(Record{Key: p.key, Kind: p.kind, Function: p.fn, Pending: true, Attempts: p.attempts})
	}
	return p.attempts, s.BodyWait(tid)
}

// RecordStepPending records step id pending with its attempts so far:
// the run stops with the step's body unfinished (paused when its retries
// ran out), and a replay runs the body again as the next attempt.
func (s *Sched) RecordStepPending(id PromiseID) {
	p := s.promises[id-1]
	if s.opts.OnRecord != nil {
		s.opts.OnRecord(Record{Key: p.key, Kind: p.kind, Function: p.fn, Pending: true, Attempts: p.attempts})
	}
}

// PromiseFunction returns the function (a step's name, …) of promise id.
func (s *Sched) PromiseFunction(id PromiseID) string { return s.promises[id-1].fn }

// TaskPath returns the lineage scope key of a task ("" for the root,
// "t2", "fan.0", …), whatever the minting policy: the task's structural
// identity, which a checker compares across schedules.
func (s *Sched) TaskPath(tid TaskID) string {
	if tid == 0 || int(tid) > len(s.tasks) {
		return ""
	}
	return s.tasks[tid-1].path.Key()
}

// BodyPromise returns the step promise whose body the task runs, 0 if none.
func (s *Sched) BodyPromise(tid TaskID) PromiseID {
	if tid == 0 || int(tid) > len(s.tasks) {
		return 0
	}
	return s.tasks[tid-1].body
}

// BodyKey returns the key of the step whose body the task runs, "" if none.
func (s *Sched) BodyKey(tid TaskID) string {
	if tid == 0 || int(tid) > len(s.tasks) || s.tasks[tid-1].body == 0 {
		return ""
	}
	return s.promises[s.tasks[tid-1].body-1].key
}

// StepDefer ends the body of step p like StepDone, but neither settles
// nor holds its outcome: the host delivers it later as a completion (a
// simulation, which gives every step body a duration). The task goes on
// and awaits the promise.
func (s *Sched) StepDefer(tid TaskID, id PromiseID) error {
	t, err := s.running(tid)
	if err != nil {
		return err
	}
	if t.body == 0 || t.body != id {
		return misuse("task %d reported step promise %d done, but it is not running that step's body", tid, id)
	}
	t.body = 0
	s.bodies--
	return nil
}

// BodyWaited reports whether the running task's current step body has
// waited (its outcome will be held).
func (s *Sched) BodyWaited(tid TaskID) bool {
	if tid == 0 || int(tid) > len(s.tasks) {
		return false
	}
	return s.tasks[tid-1].bodyWaited
}

// Attempts returns the attempt count of promise p (0 for no promise).
func (s *Sched) Attempts(id PromiseID) int {
	if id == 0 || int(id) > len(s.promises) {
		return 0
	}
	return s.promises[id-1].attempts
}

// Issued reports whether this execution issued a durable op with the key
// (for CancelKey: whether the cancellation was delivered).
func (s *Sched) Issued(key string) bool {
	if key == CancelKey {
		return s.canceled
	}
	_, ok := s.byKey[key]
	return ok
}

// PromiseOf returns the key of a promise (a durable op's key, or the
// scope key of a task for its join) and, for a task's join, the task.
func (s *Sched) PromiseOf(id PromiseID) (key string, joins TaskID) {
	if id == 0 || int(id) > len(s.promises) {
		return "", 0
	}
	p := s.promises[id-1]
	if p.kind == "task" {
		return p.key, p.owner
	}
	return p.key, 0
}

// Settled lists the durable outcomes delivered so far, in settle order.
func (s *Sched) Settled() []Record {
	out := make([]Record, 0, len(s.order))
	for _, id := range s.order {
		p := s.promises[id-1]
		out = append(out, Record{Key: p.key, Kind: p.kind, Function: p.fn, Outcome: p.out})
	}
	return out
}
