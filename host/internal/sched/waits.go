package sched

// How a task waits and ends: step bodies done, body sleeps, await,
// select, task done.

// StepDone reports that the body of step p returned. It returns true when
// the outcome settled now (inline); false when it is held until the next
// idle point, which happens when the body waited.
func (s *Sched) StepDone(tid TaskID, id PromiseID, out Outcome) (bool, error) {
	t, err := s.running(tid)
	if err != nil {
		return false, err
	}
	if t.body == 0 || t.body != id {
		return false, misuse("task %d reported step promise %d done, but it is not running that step's body", tid, id)
	}
	p := s.promises[id-1]
	t.body = 0
	s.bodies--
	if t.bodyWaited {
		s.held = append(s.held, held{p: id, out: out})
		return false, nil
	}
	s.settle(id, p, out, nil)
	return true, nil
}

// BodyWait marks the running task as waiting inside its step body (a real
// wait such as StepContext.Sleep). The host wakes it with a body
// completion.
func (s *Sched) BodyWait(tid TaskID) error {
	t, err := s.running(tid)
	if err != nil {
		return err
	}
	if t.body == 0 {
		return misuse("task %d waited in a step body, but it is not in one", tid)
	}
	t.bodyWaited = true
	t.waitGen++
	t.state = taskWaiting
	s.current = 0
	return nil
}

// Await makes the running task wait for a promise. It returns the outcome
// at once if the promise is settled; otherwise the task waits and the
// guest must yield (Next).
func (s *Sched) Await(tid TaskID, id PromiseID) (Outcome, bool, error) {
	_, out, ok, err := s.Select(tid, []PromiseID{id})
	return out, ok, err
}

// Select waits for the first of several promises. If some are settled it
// returns the index of the one settled first (journal order). Otherwise
// the task waits on all of them.
func (s *Sched) Select(tid TaskID, ids []PromiseID) (int, Outcome, bool, error) {
	t, err := s.running(tid)
	if err != nil {
		return 0, Outcome{}, false, err
	}
	if t.body != 0 {
		return 0, Outcome{}, false, misuse("task %d awaited a future inside a step body", tid)
	}
	if len(ids) == 0 {
		return 0, Outcome{}, false, misuse("task %d selected on no futures", tid)
	}
	best := -1
	for i, id := range ids {
		p, err := s.promise(id)
		if err != nil {
			return 0, Outcome{}, false, err
		}
		if p.kind == "task" && p.owner == tid {
			return 0, Outcome{}, false, misuse("task %d awaits its own completion", tid)
		}
		if p.settled && (best < 0 || p.evt < s.promises[ids[best]-1].evt) {
			best = i
		}
	}
	if best >= 0 {
		return best, s.promises[ids[best]-1].out, true, nil
	}
	t.waitGen++
	for _, id := range ids {
		p := s.promises[id-1]
		p.waiters = append(p.waiters, waiter{task: tid, gen: t.waitGen})
	}
	t.state = taskWaiting
	s.current = 0
	return 0, Outcome{}, false, nil
}

// TaskDone ends the running task with its outcome; its join promise settles.
func (s *Sched) TaskDone(tid TaskID, out Outcome) error {
	t, err := s.running(tid)
	if err != nil {
		return err
	}
	if t.body != 0 {
		t.body = 0
		s.bodies--
	}
	t.state = taskDone
	s.current = 0
	s.settle(t.join, s.promises[t.join-1], out, nil)
	return nil
}
