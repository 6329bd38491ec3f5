package exec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host/internal/taskboard"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// runState is what a run keeps in memory while it is active in this
// process, across the executions (instances) that evictions create:
// armed timers, activities in flight, completions not yet delivered, and
// records not yet committed.
type RunState struct {
	Run store.Run
	// ByWork: a worker (Work) drives the run, so its children are runs
	// any worker claims, not drives of this process.
	ByWork bool
	// ChildDrive is how this process drives its children: the options
	// of the parent's drive they keep.
	ChildDrive ChildDrive
	StatusDue  bool // the batch holds the drive's running status, to commit as the execution starts
	MB         mailbox
	timers     map[string]int64 // armed durable timers: key -> deadline
	handles    map[string]*time.Timer
	activities map[string]bool   // activities in flight, by key
	starts     []activityCall    // in-process calls to start after the next commit
	Remote     map[string]int64  // remote activity tasks issued: key -> when (unix ns; tasks.go)
	remoteDue  *time.Timer       // nudges the run when its newest remote task stops being fresh
	Board      *taskboard.Board  // told when the run's tasks are committed; nil: no one
	promises   map[string]bool   // external promises issued
	children   map[string]string // child runs issued and not delivered: key -> child run id
	abandons   map[string]bool   // keys of children whose policy is ParentCloseAbandon
	bodyWaits  int               // waits inside step bodies in flight
	bodyTimers []*time.Timer     // their timers
	depth      int               // ancestors of the run; -1 until needed (limits.go)
	Batch      store.Batch
	// A commit handed to the store by flushAsync and its batch; spare is
	// the outcome buffer of the last one, reused.
	inflight      chan error
	inflightBatch store.Batch
	spare         []store.RunOutcome
	Cancel        context.CancelFunc // stops activities
	actx          context.Context
	deadline      *time.Timer // run timeout
	World         world       // where its effects happen (effects.go)
	Activating    time.Time   // when the next execution's activation began (metrics.go)
	// lease, when set, is the worker's lease on the run (Work): every
	// commit of the run is fenced by it, so once another worker has
	// claimed the run nothing more is recorded from here.
	Lease *store.Lease
	// issued holds when each pending op of the journal the execution
	// replays was issued, for its op latency (timeline.go).
	issued map[string]int64

	Mu        sync.Mutex
	childLive map[string]bool    // child runs this run drives in this process
	childGone chan struct{}      // closed when one stops being driven (waitChildren); nil: no one waits
	Ended     atomic.Bool        // the run's end is committed: its children's drives outlive its drive
	Late      []store.RunAttempt // attempts of activity calls, for the next flush (timeline.go)
	// OpStarts holds, when tracing, when each op pending as the current
	// execution started was issued (tracing.go).
	OpStarts map[string]int64
}

// NewRunState is the state of a drive of run, in the live world; the
// driver sets Lease and ByWork.
func NewRunState(run store.Run) *RunState {
	actx, cancel := context.WithCancel(context.Background())
	rs := &RunState{Run: run, timers: map[string]int64{}, handles: map[string]*time.Timer{},
		activities: map[string]bool{}, Remote: map[string]int64{}, promises: map[string]bool{}, children: map[string]string{}, abandons: map[string]bool{}, depth: -1,
		actx: actx, Cancel: cancel, childLive: map[string]bool{}, World: liveWorld{}}
	return rs
}

// ChildDrive is the part of a drive's options its children's drives keep
// (host.DriveOptions' fields of the same names).
type ChildDrive struct {
	WaitTimers bool
	Owner      string
	LeaseTTL   time.Duration
}

// close stops timers and activities.
func (rs *RunState) Close() {
	for _, t := range rs.handles {
		t.Stop()
	}
	for _, t := range rs.bodyTimers {
		t.Stop()
	}
	if rs.deadline != nil {
		rs.deadline.Stop()
	}
	if rs.remoteDue != nil {
		rs.remoteDue.Stop()
	}
	rs.Cancel()
}

// liveChildren is the number of child runs being driven for this run.
func (rs *RunState) liveChildren() int {
	rs.Mu.Lock()
	defer rs.Mu.Unlock()
	return len(rs.childLive)
}

// setChildLive marks a child run as driven (or no longer) by this run and
// reports whether it changed.
func (rs *RunState) SetChildLive(id string, live bool) bool {
	rs.Mu.Lock()
	defer rs.Mu.Unlock()
	if rs.childLive[id] == live {
		return false
	}
	if live {
		rs.childLive[id] = true
	} else {
		delete(rs.childLive, id)
		if rs.childGone != nil {
			close(rs.childGone)
			rs.childGone = nil
		}
	}
	return true
}

// armTimer arms the durable timer of key, once.
func (rs *RunState) armTimer(key string, deadline int64) {
	if _, ok := rs.timers[key]; ok {
		return
	}
	rs.timers[key] = deadline
	rs.handles[key] = time.AfterFunc(time.Until(time.Unix(0, deadline)), func() {
		rs.MB.Put(sched.Completion{Key: key, Outcome: sched.Outcome{OK: true, Value: []byte("null")}})
	})
}

// activityCall is an activity to run for a call op.
type activityCall struct {
	key, name string
	fn        activity.Func
	input     []byte
	opts      abi.OpOptions
	attempt   int  // the attempt to run first
	resumed   bool // an earlier execution started it (the process stopped meanwhile)
}

// startActivity runs the activity on its own goroutine, retrying by its
// policy; each new attempt is recorded (pending) before it runs, so a
// restart continues the count. Its outcome arrives in the mailbox.
func (rs *RunState) startActivity(h Host, c activityCall) {
	if rs.activities[c.key] {
		return
	}
	rs.activities[c.key] = true
	st, tr := h.Config().Store, attemptTracer{}
	if t := h.Config().Tracer; t != nil {
		tr = attemptTracer{t: t, run: rs.Run, worker: rs.Worker()} // read here, not on the activity's goroutine
	}
	h.Spawn(func() {
		out, attempts, err := rs.runAttempts(st, tr, c)
		if rs.actx.Err() == nil && Exhausted(c.opts, err, attempts) {
			// The call stays pending: the execution stops within
			// CancelGrace, and the next one after an unpause calls again.
			reason := exhaustedReason("call", c.name, c.key, attempts, err.Error())
			if perr := rs.pauseRun(rs.actx, st, reason); perr == nil {
				return
			}
		}
		done := sched.Completion{Key: c.key, Outcome: sched.Outcome{OK: true, Value: out}, Attempts: attempts}
		if err != nil {
			done.Outcome = errOutcome(err.Error())
		}
		if rs.actx.Err() == nil {
			rs.MB.Put(done)
		}
	})
}

func (rs *RunState) runAttempts(st store.Store, tr attemptTracer, c activityCall) ([]byte, int, error) {
	maxAttempts := int(c.opts.MaxAttempts)
	if c.resumed && maxAttempts > 0 && c.attempt > maxAttempts && c.opts.OnExhausted != abi.OnExhaustedPause {
		return nil, c.attempt - 1, fmt.Errorf("activity %q: attempt %d of %d was interrupted (the process stopped); no attempts left", c.name, c.attempt-1, maxAttempts)
	}
	var prev store.Attempt // the attempt before, failed (timeline.go)
	for attempt := c.attempt; ; attempt++ {
		start := time.Now().UnixNano()
		if attempt > c.attempt || c.resumed {
			// Record the attempt before it runs: a restart continues from it.
			o := store.Outcome{Key: c.key, Kind: "call", Function: c.name, Status: store.OutcomePending, Attempts: attempt}
			b := store.Batch{Outcomes: []store.RunOutcome{{RunID: rs.Run.ID, Outcome: o}}, Fence: rs.Lease,
				Attempts: []store.RunAttempt{{RunID: rs.Run.ID, Attempt: store.Attempt{Key: c.key, N: attempt, Start: start}}}}
			if prev.N > 0 {
				b.Attempts = append(b.Attempts, store.RunAttempt{RunID: rs.Run.ID, Attempt: prev})
			}
			if err := st.Commit(rs.actx, b); err != nil {
				return nil, attempt, fmt.Errorf("activity %q: record attempt %d: %w", c.name, attempt, err)
			}
		}
		ctx, cancel := rs.actx, context.CancelFunc(func() {})
		if c.opts.Timeout > 0 {
			ctx, cancel = context.WithTimeout(rs.actx, time.Duration(c.opts.Timeout))
		}
		info, endSpan := callInfo(rs.Run.ID, c, attempt), func(error) {}
		if tr.t != nil {
			ctx, info.Traceparent, endSpan = tr.t.Attempt(ctx, tr.run, tr.worker, c.key, c.name, attempt)
		}
		ctx = activity.WithInfo(ctx, info)
		out, err := runActivity(ctx, c.fn, c.input)
		if err == nil && ctx.Err() == context.DeadlineExceeded {
			err = ctx.Err()
		}
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && rs.actx.Err() == nil {
			err = fmt.Errorf("activity %q timed out after %s (attempt %d)", c.name, time.Duration(c.opts.Timeout), attempt)
		}
		endSpan(err)
		end := time.Now().UnixNano()
		if err == nil || !Retryable(c.opts, err, attempt) {
			if attempt > c.attempt || c.resumed {
				a := store.Attempt{Key: c.key, N: attempt, End: end}
				if err != nil {
					a.Error = err.Error()
				}
				rs.lateAttempt(a)
			}
			return out, attempt, err
		}
		prev = store.Attempt{Key: c.key, N: attempt, Start: start, End: end, Error: store.CleanText(err.Error())}
		t := time.NewTimer(Backoff(c.opts, attempt))
		select {
		case <-t.C:
		case <-rs.actx.Done():
			t.Stop()
			return nil, attempt, rs.actx.Err()
		}
	}
}

// callInfo is the activity.Info of an attempt of call c in run runID.
func callInfo(runID string, c activityCall, attempt int) activity.Info {
	return activity.Info{RunID: runID, Key: c.key, Name: c.name, Attempt: attempt, IdempotencyKey: runID + "." + c.key}
}

// retryable reports whether an attempt that failed with err is retried.
func Retryable(o abi.OpOptions, err error, attempt int) bool {
	return roundAttempt(o, attempt) < int(o.MaxAttempts) && retryableError(o, err)
}

// retryableError reports whether err may be retried at all: it is not
// an activity.NonRetryableError nor has one of o's non-retryable texts.
func retryableError(o abi.OpOptions, err error) bool {
	var nr *activity.NonRetryableError
	if errors.As(err, &nr) {
		return false
	}
	return !nonRetryableText(o, err.Error())
}

func nonRetryableText(o abi.OpOptions, msg string) bool {
	for _, s := range o.NonRetryable {
		if s != "" && strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// backoff is the wait after the given failed attempt: exponential, capped,
// with jitter.
func Backoff(o abi.OpOptions, attempt int) time.Duration {
	attempt = roundAttempt(o, attempt)
	d := float64(o.InitialBackoff) * math.Pow(float64(max(o.Multiplier, 1000))/1000, float64(attempt-1))
	if o.MaxBackoff > 0 && d > float64(o.MaxBackoff) {
		d = float64(o.MaxBackoff)
	}
	if j := float64(o.Jitter) / 1000; j > 0 {
		d *= 1 + j*(2*rand.Float64()-1)
	}
	return time.Duration(d)
}

func runActivity(ctx context.Context, fn activity.Func, input []byte) (out []byte, err error) {
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

// bodyWait ends a wait of d inside task t's step body (close stops it).
func (rs *RunState) bodyWait(t sched.TaskID, d time.Duration) {
	rs.bodyWaits++
	rs.bodyTimers = append(rs.bodyTimers, time.AfterFunc(d, func() { rs.MB.Put(sched.Completion{Task: t}) }))
}

// delivered updates the bookkeeping after an idle point delivered cs
// (except stale, which go back to wait for an execution that issues them).
func (rs *RunState) delivered(cs, stale []sched.Completion) {
	for _, c := range cs {
		if c.Task != 0 {
			rs.bodyWaits--
			continue
		}
		delete(rs.timers, c.Key)
		delete(rs.handles, c.Key)
		delete(rs.activities, c.Key)
		delete(rs.Remote, c.Key)
		delete(rs.promises, c.Key)
		delete(rs.children, c.Key)
	}
	for _, c := range stale {
		if c.Task == 0 {
			rs.MB.stale = append(rs.MB.stale, c)
		}
	}
}

// flush commits the queued records (and run updates) as one batch, after
// the commit in flight (flushAsync), if any.
func (rs *RunState) Flush(ctx context.Context, st store.Store) error {
	if err := rs.Wait(); err != nil {
		return err
	}
	rs.takeLate()
	if len(rs.Batch.Outcomes) == 0 && len(rs.Batch.Runs) == 0 && len(rs.Batch.Tasks) == 0 && len(rs.Batch.Attempts) == 0 {
		return nil
	}
	rs.Batch.Fence = rs.Lease
	used := rs.reserveTasks(rs.Batch.Tasks)
	err := st.Commit(ctx, rs.Batch)
	taskboard.HandOver(used, err == nil)
	if err != nil {
		return fmt.Errorf("run %s: record outcomes: %w", rs.Run.ID, err)
	}
	if len(rs.Batch.Tasks) > 0 {
		rs.tasksQueued()
	}
	rs.Batch.Outcomes = rs.Batch.Outcomes[:0]
	rs.Batch.Runs = rs.Batch.Runs[:0]
	rs.Batch.Creates = nil
	rs.Batch.Settlements = nil
	rs.Batch.Tasks = nil
	rs.Batch.Attempts = nil
	rs.Batch.Attrs = nil
	rs.Batch.Release = false
	return nil
}

// flushAsync hands the queued records to the store and returns without
// waiting for the commit, so the store writes while the guest runs on. At
// most one commit is in flight: the next flush waits for it first, so
// batches are committed in order and what is stored stays a prefix of the
// journal. An error of the commit in flight is returned by the next flush.
func (rs *RunState) FlushAsync(h Host) error {
	if err := rs.Wait(); err != nil {
		return err
	}
	rs.takeLate()
	if len(rs.Batch.Outcomes) == 0 && len(rs.Batch.Runs) == 0 && len(rs.Batch.Tasks) == 0 && len(rs.Batch.Attempts) == 0 {
		return nil
	}
	b := rs.Batch
	b.Fence = rs.Lease
	rs.Batch = store.Batch{Outcomes: rs.spare[:0]}
	rs.spare = nil
	done := make(chan error, 1)
	rs.inflight, rs.inflightBatch = done, b
	used := rs.reserveTasks(b.Tasks)
	h.Spawn(func() {
		err := h.Config().Store.Commit(context.Background(), b)
		taskboard.HandOver(used, err == nil)
		if err == nil && len(b.Tasks) > 0 {
			rs.tasksQueued()
		}
		done <- err
	})
	return nil
}

// wait waits for the commit in flight.
func (rs *RunState) Wait() error {
	if rs.inflight == nil {
		return nil
	}
	err := <-rs.inflight
	rs.inflight = nil
	rs.spare = rs.inflightBatch.Outcomes[:0]
	rs.inflightBatch = store.Batch{}
	if err != nil {
		return fmt.Errorf("run %s: record outcomes: %w", rs.Run.ID, err)
	}
	return nil
}

// mailbox is an unbounded queue of completions with a wake-up signal.
type mailbox struct {
	mu     sync.Mutex
	items  []sched.Completion
	signal chan struct{}
	once   sync.Once
	stale  []sched.Completion // completions no execution has claimed yet
	// The cancellation put and not yet taken by an execution, and since
	// when (the watchdog enforces CancelGrace).
	cancelReason string
	cancelSince  time.Time
	// pauseSince is when the run's pause reached its execution (zero:
	// not paused); the watchdog enforces CancelGrace from then.
	pauseSince time.Time
}

// Pause asks the run's execution to stop at its next idle point (and
// wakes it if it waits; see Exec.pauseHere). Pausing again keeps the
// first time.
func (m *mailbox) Pause() {
	m.mu.Lock()
	if m.pauseSince.IsZero() {
		m.pauseSince = time.Now()
		// A waiting execution looks again once the grace is over.
		time.AfterFunc(CancelGrace, m.Nudge)
	}
	m.mu.Unlock()
	m.Nudge()
}

// Unpause withdraws a pause the execution has not acted on yet.
func (m *mailbox) Unpause() {
	m.mu.Lock()
	m.pauseSince = time.Time{}
	m.mu.Unlock()
}

// Paused reports whether a pause was asked for (mailbox.Pause).
func (m *mailbox) Paused() bool { return !m.pausedSince().IsZero() }

// pausedSince returns when the pause was asked for; zero for none.
func (m *mailbox) pausedSince() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pauseSince
}

func (m *mailbox) Sig() chan struct{} {
	m.once.Do(func() { m.signal = make(chan struct{}, 1) })
	return m.signal
}

func (m *mailbox) Put(c sched.Completion) {
	m.mu.Lock()
	if c.Key == sched.CancelKey && m.cancelSince.IsZero() {
		m.cancelReason, m.cancelSince = c.Outcome.Err, time.Now()
	}
	m.items = append(m.items, c)
	m.mu.Unlock()
	select {
	case m.Sig() <- struct{}{}:
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
func (m *mailbox) Restale() {
	if len(m.stale) == 0 {
		return
	}
	m.mu.Lock()
	m.items = append(m.stale, m.items...)
	m.mu.Unlock()
	m.stale = nil
}

// pendingCancel returns the cancellation put and not yet taken, and
// since when; a zero time when there is none.
func (m *mailbox) pendingCancel() (string, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cancelReason, m.cancelSince
}

// cancelTaken notes that an execution delivered the cancellation.
func (m *mailbox) cancelTaken() {
	m.mu.Lock()
	m.cancelReason, m.cancelSince = "", time.Time{}
	m.mu.Unlock()
}

// nudge wakes a waiter without an item, to make it look again at what it
// waits for (a child run stopped being driven).
func (m *mailbox) Nudge() {
	select {
	case m.Sig() <- struct{}{}:
	default:
	}
}

func (m *mailbox) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}

// waitOnce returns at once if items are queued, else after the next put
// or nudge.
func (m *mailbox) waitOnce(ctx context.Context) error {
	if m.Len() > 0 {
		return nil
	}
	select {
	case <-m.Sig():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
