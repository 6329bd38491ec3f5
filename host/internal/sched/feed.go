package sched

// Fed is a recorded outcome that the running task's next unnamed op
// receives at once on replay, if it has the recorded kind and function:
// what Op would answer, told ahead (the host's FnFeed).
type Fed struct {
	Rec     *Record
	Promise PromiseID // the handle Op will give the op
}

// feedKind reports whether Op delivers a recorded settlement of kind at
// once (a durable op's kind; not a task's join).
func feedKind(kind string) bool {
	switch kind {
	case "step", "call", "sleep", "promise", "child":
		return true
	}
	return false
}

// Feed returns the recorded settlements that the next unnamed ops of the
// running task tid receive at once, in order, at most max. It changes
// nothing: a later Op with each entry's kind and function, in order and
// with no other call between, settles it with the entry's key and
// promise. It returns nil whenever that cannot be told ahead: a task
// inside a step body, counter minting, inline replay, a journal that
// records a key twice.
func (s *Sched) Feed(tid TaskID, max int) []Fed {
	t, err := s.running(tid)
	if err != nil || t.body != 0 || s.dupKeys || s.opts.Minting == MintCounter || s.opts.ReplayInline {
		return nil
	}
	var out []Fed
	pos, next := t.scope.Position(), PromiseID(len(s.promises)+1)
	s.nextPositional() // moves posCursor past delivered records
	for c := s.posCursor; c < len(s.positional) && len(out) < max; c++ {
		i := s.positional[c]
		if s.done[i] {
			continue
		}
		rec := s.settled[i]
		if rec.Waited || !feedKind(rec.Kind) || !t.scope.KeyAt(rec.Key, pos+1+len(out)) {
			break // positions are not reused: no op of this execution has the key yet
		}
		out = append(out, Fed{Rec: rec, Promise: next + PromiseID(len(out))})
	}
	return out
}
