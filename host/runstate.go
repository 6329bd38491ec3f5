package host

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/skeinrun/skein/sched"
	"github.com/skeinrun/skein/store"
)

// runState is what a run keeps in memory while it is active in this
// process, across the executions (instances) that evictions create:
// armed timers, activities in flight, completions not yet delivered, and
// records not yet committed.
type runState struct {
	run        store.Run
	mb         mailbox
	timers     map[string]int64 // armed durable timers: key -> deadline
	handles    map[string]*time.Timer
	activities map[string]bool // activities in flight, by key
	promises   map[string]bool // external promises issued
	bodyWaits  int             // waits inside step bodies in flight
	batch      store.Batch
	cancel     context.CancelFunc // stops activities
	actx       context.Context
}

func newRunState(run store.Run) *runState {
	actx, cancel := context.WithCancel(context.Background())
	return &runState{run: run, timers: map[string]int64{}, handles: map[string]*time.Timer{},
		activities: map[string]bool{}, promises: map[string]bool{}, actx: actx, cancel: cancel}
}

// close stops timers and activities.
func (rs *runState) close() {
	for _, t := range rs.handles {
		t.Stop()
	}
	rs.cancel()
}

// armTimer arms the durable timer of key, once.
func (rs *runState) armTimer(key string, deadline int64) {
	if _, ok := rs.timers[key]; ok {
		return
	}
	rs.timers[key] = deadline
	rs.handles[key] = time.AfterFunc(time.Until(time.Unix(0, deadline)), func() {
		rs.mb.put(sched.Completion{Key: key, Outcome: sched.Outcome{OK: true, Value: []byte("null")}})
	})
}

func (rs *runState) startActivity(_ context.Context, key string, fn Activity, input []byte) {
	if rs.activities[key] {
		return
	}
	rs.activities[key] = true
	go func() {
		out, err := runActivity(rs.actx, fn, input)
		c := sched.Completion{Key: key, Outcome: sched.Outcome{OK: true, Value: out}}
		if err != nil {
			c.Outcome = sched.Outcome{Err: err.Error()}
		}
		rs.mb.put(c)
	}()
}

func runActivity(ctx context.Context, fn Activity, input []byte) (out []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("activity panicked: %v", v)
		}
	}()
	out, err = fn(ctx, input)
	if err == nil && len(out) == 0 {
		out = []byte("null")
	}
	return out, err
}

func (rs *runState) bodyWait(t sched.TaskID, d time.Duration) {
	rs.bodyWaits++
	time.AfterFunc(d, func() { rs.mb.put(sched.Completion{Task: t}) })
}

// delivered updates the bookkeeping after an idle point delivered cs
// (except stale, which go back to wait for an execution that issues them).
func (rs *runState) delivered(cs, stale []sched.Completion) {
	for _, c := range cs {
		if c.Task != 0 {
			rs.bodyWaits--
			continue
		}
		delete(rs.timers, c.Key)
		delete(rs.handles, c.Key)
		delete(rs.activities, c.Key)
		delete(rs.promises, c.Key)
	}
	for _, c := range stale {
		if c.Task == 0 {
			rs.mb.stale = append(rs.mb.stale, c)
		}
	}
}

// flush commits the queued records (and run updates) as one batch.
func (rs *runState) flush(ctx context.Context, st store.Store) error {
	if len(rs.batch.Outcomes) == 0 && len(rs.batch.Runs) == 0 {
		return nil
	}
	if err := st.Commit(ctx, rs.batch); err != nil {
		return fmt.Errorf("run %s: record outcomes: %w", rs.run.ID, err)
	}
	rs.batch.Outcomes = rs.batch.Outcomes[:0]
	rs.batch.Runs = rs.batch.Runs[:0]
	return nil
}

// mailbox is an unbounded queue of completions with a wake-up signal.
type mailbox struct {
	mu     sync.Mutex
	items  []sched.Completion
	signal chan struct{}
	once   sync.Once
	stale  []sched.Completion // completions no execution has claimed yet
}

func (m *mailbox) sig() chan struct{} {
	m.once.Do(func() { m.signal = make(chan struct{}, 1) })
	return m.signal
}

func (m *mailbox) put(c sched.Completion) {
	m.mu.Lock()
	m.items = append(m.items, c)
	m.mu.Unlock()
	select {
	case m.sig() <- struct{}{}:
	default:
	}
}

func (m *mailbox) drain() []sched.Completion {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.items) == 0 {
		return nil
	}
	cs := m.items
	m.items = nil
	return cs
}

// restale moves completions no execution claimed back into the queue, for
// a new execution (a replay) that may issue their ops.
func (m *mailbox) restale() {
	if len(m.stale) == 0 {
		return
	}
	m.mu.Lock()
	m.items = append(m.stale, m.items...)
	m.mu.Unlock()
	m.stale = nil
}

func (m *mailbox) wait(ctx context.Context) error {
	for {
		m.mu.Lock()
		n := len(m.items)
		m.mu.Unlock()
		if n > 0 {
			return nil
		}
		select {
		case <-m.sig():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
