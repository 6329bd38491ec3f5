// Package sched is the host's single-threaded cooperative scheduler for one
// run: tasks with lineage scopes, promises, a FIFO ready queue, and the
// settlement journal that lets a replay deliver every recorded outcome at
// the same point of the schedule as the live pass did.
//
// The package is pure: no wasm, no SQL, no clocks of its own. The host calls
// it from the goroutine that runs the guest, feeds it completions at idle
// points, and persists the records it emits. The rules it implements are
// those of docs/design.md ("The journal"); RATIONALE.md says why a step
// whose body waited is delivered, like an activity, at the next idle point
// after its body returns.
package sched

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/skeinrun/skein/lineage"
)

// TaskID is the handle of a task; the root task is 1.
type TaskID uint32

// PromiseID is the handle of a promise; 0 is never used.
type PromiseID uint32

// Root is the root task's handle.
const Root TaskID = 1

// Outcome is the settled value (JSON) or error text of a promise.
type Outcome struct {
	OK    bool
	Value []byte
	Err   string
}

// Record is the journal entry of one durable outcome.
type Record struct {
	Key       string
	Kind      string // step, call, sleep, promise, child
	Function  string
	Pending   bool // issued, not settled (timers carry Deadline)
	Outcome   Outcome
	Seq       int64 // settle sequence; 0 while pending
	Waited    bool  // delivered at an idle point (else inline)
	Idle      int64 // counted idle point (Waited only)
	WakeOrder int   // order within the idle point (Waited only)
	VTime     int64 // virtual time at settlement, unix ns
	Deadline  int64 // timers: unix ns
	Attempts  int
}

// Minting chooses how op keys are made. Only MintLineage is correct;
// MintCounter exists so tests can show what lineage prevents.
type Minting int

// Minting policies.
const (
	MintLineage Minting = iota
	MintCounter         // test only: one call-order counter per run ("1", "2", …) for every op in every task
)

// Options configure a scheduler.
type Options struct {
	// Now returns real time in unix ns; it stamps live settlements.
	Now func() int64
	// StartTime is the run's virtual start, unix ns.
	StartTime int64
	// OnRecord receives every record to persist, in order: a new pending
	// op, a new settlement. Replayed records are not sent again.
	OnRecord func(Record)
	// Minting is MintLineage unless a test says otherwise.
	Minting Minting
	// ReplayInline is test only: deliver every recorded outcome at once
	// when its op is issued, ignoring idle points (the "instant promise
	// recovery" that lineage ids make harmless), and skip function checks.
	ReplayInline bool
}

type taskState uint8

const (
	taskReady taskState = iota
	taskRunning
	taskWaiting
	taskDone
)

type task struct {
	id      TaskID
	scope   *lineage.Scope
	path    *lineage.Scope // the lineage scope, even under MintCounter
	join    PromiseID
	state   taskState
	started bool
	waitGen uint64    // bumps on every wait, so stale waiter entries are ignored
	wakeBy  PromiseID // the promise that woke it (0: body wake or start)

	body       PromiseID // step whose body is executing, 0 if none
	bodyWaited bool
	forks      []*lineage.Fork
	branches   []int // branches spawned per fork
}

type waiter struct {
	task TaskID
	gen  uint64
}

type promise struct {
	key      string
	kind     string
	fn       string
	durable  bool
	settled  bool
	out      Outcome
	evt      int64 // order of settlement among all promises of this execution
	waiters  []waiter
	rec      *Record // recorded settlement this replay must deliver
	inRound  bool    // the recorded settlement is waited-for: delivered by a round
	owner    TaskID
	attempts int
	deadline int64 // timers
}

type held struct {
	p   PromiseID
	out Outcome
}

// Sched schedules one execution (live or replay) of one run.
type Sched struct {
	opts     Options
	tasks    []*task    // index TaskID-1
	promises []*promise // index PromiseID-1
	ready    []TaskID
	head     int
	current  TaskID

	journal    map[string]*Record // recorded records by key
	settled    []*Record          // recorded settled records by seq
	rounds     map[int64][]*Record
	done       []bool          // per settled[i]: delivered or skipped (orphaned)
	index      map[*Record]int // position in settled
	remaining  int             // recorded settlements neither delivered nor skipped
	cursor     int             // first settled[i] not done
	positional []*Record       // recorded positional settlements, by seq
	posCursor  int
	lastPos    int64 // seq of the last positional recorded settlement delivered
	shifted    bool  // a new outcome settled during the replay: renumber what follows
	nextSeq    int64 // last seq given to a new settlement
	idle       int64 // last counted idle point

	byKey   map[string]PromiseID
	evt     int64
	order   []PromiseID // durable promises in settle order
	vnow    int64
	counter int // MintCounter
	held    []held
	bodies  int // tasks inside a step body

	canceled bool   // the run's cancellation was delivered
	reason   string // its reason
}

// CancelKey is the journal key of a run's cancellation (store.CancelKey).
// It is not a lineage key, so it never collides with an op.
const CancelKey = "!cancel"

// CanceledPrefix starts the error text of every outcome failed by a
// cancellation; the guest SDK turns such errors into skein.ErrCanceled.
const CanceledPrefix = "skein: canceled: "

// cancelable reports whether a pending op of this kind fails when the run
// is canceled. Steps and activity calls run to their end (compensation
// needs them); children are canceled by the host and settle with their
// own end.
func cancelable(kind string) bool { return kind == "sleep" || kind == "promise" }

// New returns a scheduler for an execution whose journal so far is
// recorded (any order). The root task is ready.
func New(opts Options, recorded []Record) *Sched {
	if opts.Now == nil {
		panic("sched: Options.Now is required")
	}
	s := &Sched{
		opts:    opts,
		journal: make(map[string]*Record, len(recorded)),
		rounds:  make(map[int64][]*Record),
		byKey:   make(map[string]PromiseID),
		vnow:    opts.StartTime,
	}
	for i := range recorded {
		r := &recorded[i]
		s.journal[r.Key] = r
		if r.Pending {
			continue
		}
		s.settled = append(s.settled, r)
		if r.Seq > s.nextSeq {
			s.nextSeq = r.Seq
		}
		if r.Waited {
			s.rounds[r.Idle] = append(s.rounds[r.Idle], r)
		}
	}
	sort.SliceStable(s.settled, func(i, j int) bool { return s.settled[i].Seq < s.settled[j].Seq })
	s.done = make([]bool, len(s.settled))
	s.index = make(map[*Record]int, len(s.settled))
	s.remaining = len(s.settled)
	for i, r := range s.settled {
		s.index[r] = i
		if !Named(r.Key) {
			s.positional = append(s.positional, r)
		}
	}
	for _, rs := range s.rounds {
		sort.Slice(rs, func(i, j int) bool { return rs[i].WakeOrder < rs[j].WakeOrder })
	}
	s.newTask(lineage.Root())
	return s
}

func (s *Sched) newTask(scope *lineage.Scope) *task {
	t := &task{id: TaskID(len(s.tasks) + 1), scope: scope, path: scope}
	s.tasks = append(s.tasks, t)
	t.join = s.newPromise(&promise{key: scope.Key(), kind: "task", owner: t.id})
	s.push(t)
	return t
}

func (s *Sched) newPromise(p *promise) PromiseID {
	s.promises = append(s.promises, p)
	return PromiseID(len(s.promises))
}

func (s *Sched) push(t *task) {
	t.state = taskReady
	s.ready = append(s.ready, t.id)
}

func (s *Sched) task(id TaskID) (*task, error) {
	if id == 0 || int(id) > len(s.tasks) {
		return nil, misuse("unknown task handle %d", id)
	}
	return s.tasks[id-1], nil
}

func (s *Sched) promise(id PromiseID) (*promise, error) {
	if id == 0 || int(id) > len(s.promises) {
		return nil, misuse("unknown promise handle %d", id)
	}
	return s.promises[id-1], nil
}

// running returns the task if it is the one currently running.
func (s *Sched) running(id TaskID) (*task, error) {
	t, err := s.task(id)
	if err != nil {
		return nil, err
	}
	if s.current != id || t.state != taskRunning {
		return nil, misuse("task %d issued a call while it is not the running task", id)
	}
	return t, nil
}

// Replaying reports whether recorded settlements remain to be delivered.
func (s *Sched) Replaying() bool { return s.remaining > 0 }

// Named reports whether a key ends in a name (skein.ID) rather than a
// position.
func Named(key string) bool {
	last := key[strings.LastIndexByte(key, '.')+1:]
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return true
		}
	}
	return last == ""
}

// finish marks a recorded settlement delivered or skipped.
func (s *Sched) finish(rec *Record) {
	i, ok := s.index[rec]
	if !ok || s.done[i] {
		return
	}
	s.done[i] = true
	s.remaining--
}

// nextPending returns the first recorded settlement neither delivered nor
// skipped, nil when none is left.
func (s *Sched) nextPending() *Record {
	for s.cursor < len(s.settled) && s.done[s.cursor] {
		s.cursor++
	}
	if s.cursor == len(s.settled) {
		return nil
	}
	return s.settled[s.cursor]
}

// InBody reports whether some task is inside a step body; a run is never
// dropped then, since dropping it would run the body again.
func (s *Sched) InBody() bool { return s.bodies > 0 }

// CurrentInBody reports whether the running task is inside a step body.
func (s *Sched) CurrentInBody() bool {
	return s.current != 0 && s.tasks[s.current-1].body != 0
}

// VNow returns the run's virtual time: the start time, advanced to the
// virtual time of each settlement as it is delivered.
func (s *Sched) VNow() int64 { return s.vnow }

// Held reports whether step outcomes are waiting for the next live idle
// point.
func (s *Sched) Held() bool { return len(s.held) > 0 }

// Current returns the running task, 0 at an idle point.
func (s *Sched) Current() TaskID { return s.current }

// Done reports whether the root task has finished, and its outcome.
func (s *Sched) Done() (Outcome, bool) {
	p := s.promises[s.tasks[0].join-1]
	return p.out, p.settled
}

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
	t, err := s.running(tid)
	if err != nil {
		return OpResult{}, err
	}
	if t.body != 0 {
		return OpResult{}, misuse("task %d issued a %s op inside the body of step %q: step bodies must not issue durable ops", tid, kind, s.promises[t.body-1].key)
	}
	key, err := s.mint(t, name)
	if err != nil {
		return OpResult{}, err
	}
	if _, dup := s.byKey[key]; dup {
		// Only possible with MintCounter or a lineage bug.
		return OpResult{}, misuse("key %q issued twice", key)
	}
	p := &promise{key: key, kind: kind, fn: fn, durable: true, owner: tid}
	id := s.newPromise(p)
	s.byKey[key] = id
	res := OpResult{Promise: id, Key: key}
	rec := s.journal[key]
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
		if kind == "step" { // a step is never recorded pending; treat as new
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
	for s.posCursor < len(s.positional) && s.done[s.index[s.positional[s.posCursor]]] {
		s.posCursor++
	}
	if s.posCursor < len(s.positional) {
		if want := s.positional[s.posCursor]; want != rec && !want.Waited {
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

// Settled lists the durable outcomes delivered so far, in settle order.
func (s *Sched) Settled() []Record {
	out := make([]Record, 0, len(s.order))
	for _, id := range s.order {
		p := s.promises[id-1]
		out = append(out, Record{Key: p.key, Kind: p.kind, Function: p.fn, Outcome: p.out})
	}
	return out
}
