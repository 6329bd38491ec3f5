package memory

// DeleteRuns removes every run whose id match reports true, with all
// that belongs to it: its outcomes, settlements, attempts, lease history
// and activity tasks. It returns how many runs it removed. It is not part
// of store.Store: the checker (check.Module) forgets the runs it made once
// it has compared them, so that its memory does not grow with the number
// of schedules it checks.
func (s *Store) DeleteRuns(match func(id string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleteRuns(match)
}

// deleteRuns is DeleteRuns; the caller holds mu.
func (s *Store) deleteRuns(match func(id string) bool) int {
	n := 0
	kept := s.ids[:0]
	for _, id := range s.ids {
		if !match(id) {
			kept = append(kept, id)
			continue
		}
		delete(s.runs, id)
		delete(s.tasks.last, id)
		n++
	}
	clear(s.ids[len(kept):])
	s.ids = kept
	if n > 0 {
		for k, t := range s.tasks.byID {
			if s.runs[t.t.RunID] == nil {
				delete(s.tasks.byID, k)
			}
		}
	}
	return n
}
