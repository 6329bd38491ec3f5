package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/skeinrun/skein/store"
)

// taskQueue holds the activity tasks. The caller holds Store.mu.
type taskQueue struct {
	byID  map[string]*taskRec // by run + "\x00" + key
	seq   int64               // last Task.Seq handed out
	clock int64               // the latest tag claimed (fair queueing)
	last  map[string]int64    // each run's latest tag
}

type taskRec struct {
	t   store.Task
	tag int64
}

func taskID(runID, key string) string { return runID + "\x00" + key }

// nextTag is the fair-queueing tag of run's next task (see the SQLite
// store's nextTagSQL).
func (q *taskQueue) nextTag(runID string) int64 {
	if q.last == nil {
		q.last = map[string]int64{}
	}
	tag := max(q.clock, q.last[runID]) + 1
	q.last[runID] = tag
	return tag
}

// queue inserts t unless its (run, key) has a task already.
func (q *taskQueue) queue(t store.Task, now time.Time) {
	if q.byID == nil {
		q.byID = map[string]*taskRec{}
	}
	id := taskID(t.RunID, t.Key)
	if q.byID[id] != nil {
		return
	}
	q.seq++
	t = t.ForQueue()
	t.Seq = q.seq
	t.Input, t.Options = bytes.Clone(t.Input), bytes.Clone(t.Options)
	t.CreatedAt = orNow(t.CreatedAt, now)
	if t.VisibleAt == 0 {
		t.VisibleAt = t.CreatedAt.UnixNano()
	}
	q.byID[id] = &taskRec{t: t, tag: q.nextTag(t.RunID)}
}

func copyTask(t store.Task) store.Task {
	t.Input, t.Options, t.Progress = bytes.Clone(t.Input), bytes.Clone(t.Options), bytes.Clone(t.Progress)
	return t
}

// ClaimTasks hands queued tasks to a worker. See store.TaskStore.
func (s *Store) ClaimTasks(ctx context.Context, c store.TaskClaim) ([]store.Task, error) {
	if c.Owner == "" || len(c.Names) == 0 || c.Max < 1 || c.TTL <= 0 {
		return nil, fmt.Errorf("memory store: claim tasks: owner, names, max >= 1 and a positive ttl are needed")
	}
	if err := c.CheckTexts(); err != nil {
		return nil, fmt.Errorf("memory store: claim tasks: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: claim tasks: %w", err)
	}
	var cand []*taskRec
	for _, r := range s.tasks.byID {
		if r.t.State == store.TaskQueued && r.t.VisibleAt <= c.Now && slices.Contains(c.Names, r.t.Name) {
			cand = append(cand, r)
		}
	}
	slices.SortFunc(cand, func(a, b *taskRec) int { return cmp.Or(cmp.Compare(a.tag, b.tag), cmp.Compare(a.t.Seq, b.t.Seq)) })
	var out []store.Task
	for _, r := range cand[:min(len(cand), c.Max)] {
		t := &r.t
		t.State, t.Owner, t.ClaimedAt, t.Heartbeat, t.Progress = store.TaskClaimed, c.Owner, c.Now, 0, nil
		t.Expiry = store.LeaseEnd(c.Now, c.TTL, c.Now, t.Timeout)
		s.tasks.clock = max(s.tasks.clock, r.tag)
		out = append(out, copyTask(*t))
	}
	return out, nil
}

// task returns the record of (run, key). The caller holds mu.
func (s *Store) task(ctx context.Context, runID, key string) (*taskRec, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	r := s.tasks.byID[taskID(runID, key)]
	if r == nil {
		return nil, fmt.Errorf("task %s.%s: %w", runID, key, store.ErrNotFound)
	}
	return r, nil
}

// HeartbeatTask extends a claimed attempt's lease. See store.TaskStore.
func (s *Store) HeartbeatTask(ctx context.Context, runID, key string, attempt int, owner string, now int64, ttl time.Duration, progress []byte) (store.Task, error) {
	if err := store.CheckText("heartbeat: owner", owner); err != nil {
		return store.Task{}, fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.task(ctx, runID, key)
	if err == nil {
		err = store.CheckTaskAttempt(r.t, attempt, owner, now, false)
	}
	if err != nil {
		return store.Task{}, fmt.Errorf("memory store: heartbeat: %w", err)
	}
	r.t.Heartbeat, r.t.Expiry = now, store.LeaseEnd(now, ttl, r.t.ClaimedAt, r.t.Timeout)
	if progress != nil {
		r.t.Progress = bytes.Clone(progress)
	}
	return copyTask(r.t), nil
}

// EndTask ends a task's current attempt. See store.TaskStore.
func (s *Store) EndTask(ctx context.Context, e store.TaskEnd) error {
	if (e.Settle == nil) == (e.Retry == nil) {
		return fmt.Errorf("memory store: end task %s.%s: exactly one of Settle and Retry is needed", e.RunID, e.Key)
	}
	if err := e.CheckTexts(); err != nil {
		return fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.task(ctx, e.RunID, e.Key)
	if err == nil {
		err = store.CheckTaskAttempt(r.t, e.Attempt, e.Owner, e.Now, e.Expired)
	}
	if err != nil {
		return fmt.Errorf("memory store: end task: %w", err)
	}
	t := &r.t
	if rt := e.Retry; rt != nil {
		t.State, t.Attempt, t.VisibleAt, t.LastError, t.Heartbeat, t.Expiry = store.TaskQueued, t.Attempt+1, rt.VisibleAt, rt.Error, 0, 0
		r.tag = s.tasks.nextTag(t.RunID)
		return nil
	}
	st := *e.Settle
	st.RunID, st.Key = e.RunID, e.Key
	st.Value = bytes.Clone(st.Value)
	t.State, t.Expiry = store.TaskDone, 0
	if st.Error != "" {
		t.LastError = st.Error
	}
	if rec := s.runs[e.RunID]; rec != nil {
		rec.addSettlement(st, time.Unix(0, e.Now))
	}
	return nil
}

// CancelTasks cancels a run's open tasks. See store.TaskStore.
func (s *Store) CancelTasks(ctx context.Context, runID, reason string) error {
	if err := store.CheckText("cancel reason", reason); err != nil {
		return fmt.Errorf("memory store: cancel tasks of %s: %w", runID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory store: cancel tasks of %s: %w", runID, err)
	}
	for _, r := range s.tasks.byID {
		if r.t.RunID == runID && (r.t.State == store.TaskQueued || r.t.State == store.TaskClaimed) {
			r.t.State, r.t.LastError, r.t.Expiry = store.TaskCanceled, reason, 0
		}
	}
	return nil
}

// ExpiredTasks lists claimed tasks whose lease ended. See store.TaskStore.
func (s *Store) ExpiredTasks(ctx context.Context, now int64, limit int) ([]store.Task, error) {
	out, err := s.listTasks(ctx, func(t *store.Task) bool { return t.State == store.TaskClaimed && t.Expiry <= now },
		func(a, b store.Task) int { return cmp.Or(cmp.Compare(a.Expiry, b.Expiry), cmp.Compare(a.Seq, b.Seq)) })
	if err != nil {
		return nil, fmt.Errorf("memory store: expired tasks: %w", err)
	}
	return out[:min(len(out), max(limit, 1))], nil
}

// Tasks lists a run's tasks. See store.TaskStore.
func (s *Store) Tasks(ctx context.Context, runID string) ([]store.Task, error) {
	out, err := s.listTasks(ctx, func(t *store.Task) bool { return t.RunID == runID },
		func(a, b store.Task) int { return cmp.Compare(a.Seq, b.Seq) })
	if err != nil {
		return nil, fmt.Errorf("memory store: tasks of %s: %w", runID, err)
	}
	return out, nil
}

// Task returns one task of a run. See store.TaskStore.
func (s *Store) Task(ctx context.Context, runID, key string) (store.Task, error) {
	ts, err := s.listTasks(ctx, func(t *store.Task) bool { return t.RunID == runID && t.Key == key },
		func(a, b store.Task) int { return 0 })
	return store.One(ts, err, "memory store: task "+runID+"."+key)
}

func (s *Store) listTasks(ctx context.Context, keep func(*store.Task) bool, order func(a, b store.Task) int) ([]store.Task, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var out []store.Task
	for _, r := range s.tasks.byID {
		if keep(&r.t) {
			out = append(out, copyTask(r.t))
		}
	}
	slices.SortFunc(out, order)
	return out, nil
}

// TaskQueues counts open tasks by name. See store.TaskStore.
func (s *Store) TaskQueues(ctx context.Context) ([]store.TaskQueue, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory store: task queues: %w", err)
	}
	by := map[string]*store.TaskQueue{}
	for _, r := range s.tasks.byID {
		if r.t.State != store.TaskQueued && r.t.State != store.TaskClaimed {
			continue
		}
		q := by[r.t.Name]
		if q == nil {
			q = &store.TaskQueue{Name: r.t.Name}
			by[r.t.Name] = q
		}
		if r.t.State == store.TaskQueued {
			q.Queued++
		} else {
			q.Claimed++
		}
	}
	var out []store.TaskQueue
	for _, q := range by {
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b store.TaskQueue) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}
