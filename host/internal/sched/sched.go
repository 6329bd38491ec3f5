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
	"sort"
	"strings"

	"github.com/skeinrun/skein/internal/lineage"
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
	// LeavePendingSteps: a step the journal records pending (its body
	// was in flight when the run ended) stays pending, its body not run,
	// as a verifying replay needs; otherwise its body runs again.
	LeavePendingSteps bool
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
	positional []int           // recorded positional settlements, by seq: their positions in settled
	posCursor  int
	lastPos    int64 // seq of the last positional recorded settlement delivered
	shifted    bool  // a new outcome settled during the replay: renumber what follows
	dupKeys    bool  // a key is recorded twice: look every key up in journal
	nextSeq    int64 // last seq given to a new settlement
	idle       int64 // last counted idle point

	byKey   map[string]PromiseID
	slab    []promise // allocPromise's block
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
		byKey:   make(map[string]PromiseID, len(recorded)),
		vnow:    opts.StartTime,
	}
	for i := range recorded {
		r := &recorded[i]
		s.journal[r.Key] = r
		if len(s.journal) <= i {
			s.dupKeys = true // the map keeps the last record of a key
		}
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
			s.positional = append(s.positional, i)
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

// allocPromise returns a zero promise from a block of them: an execution
// makes one per op, and one allocation per block is cheaper. Blocks grow
// with the execution's promises, from 8 to 64: a short execution (most
// of a check's replays) does not pay for 64.
func (s *Sched) allocPromise() *promise {
	if len(s.slab) == 0 {
		s.slab = make([]promise, min(64, max(8, len(s.promises))))
	}
	p := &s.slab[0]
	s.slab = s.slab[1:]
	return p
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
	i, ok := s.nextPositional()
	if !ok || s.settled[i] != rec {
		i, ok = s.index[rec]
	}
	if !ok || s.done[i] {
		return
	}
	s.done[i] = true
	s.remaining--
}

// nextPositional returns the position in settled of the recorded
// positional settlement not yet delivered, the one checkOrder expects next.
// A replay mostly issues its ops in their recorded order, so this record
// answers most lookups without a map.
func (s *Sched) nextPositional() (int, bool) {
	for s.posCursor < len(s.positional) && s.done[s.positional[s.posCursor]] {
		s.posCursor++
	}
	if s.posCursor < len(s.positional) {
		return s.positional[s.posCursor], true
	}
	return 0, false
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
