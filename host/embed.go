package host

// The embedding surface: typed activities, per-module capability grants,
// run events, and Await. docs/embedding.md is the guide.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// embedState holds what the embedding API keeps in the host's memory. Its
// zero value is ready to use.
type embedState struct {
	mu      sync.Mutex
	grants  map[string]map[string]bool // module name or hash -> granted activities
	waiters map[string]*runWaiter      // Await: by run id

	smu   sync.RWMutex
	subs  map[*Subscription]struct{}
	nsubs atomic.Int32 // len(subs), read without the lock on every event
}

// Grant allows the module named module (the name given to Deploy, which
// covers every module deployed under that name) or with the sha256 hash
// module (that one module) to call the activities named. Grants add up;
// Grant with no activity makes an empty grant, so the module may call no
// activity at all.
//
// A module with a grant may call only the activities granted to it: a
// call to any other fails the run, with an error that names the activity
// and the module. A grant by hash takes precedence over a grant by name;
// a module has the grants of every name it was deployed under (the names
// that point at it, and those that moved to a newer version since).
// A module with no grant may call every registered activity, unless
// Config.RequireGrants is set. Child runs use their parent's module and
// so its grants.
//
// Grants live in the host's memory, like activities: register them at
// startup, before Work or Drive runs the module's runs. They are checked
// each time an activity is about to run (a new call, or a call resumed
// after a restart), not when a replay reads an outcome already recorded.
func (h *Host) Grant(module string, activities ...string) {
	e := &h.emb
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.grants == nil {
		e.grants = map[string]map[string]bool{}
	}
	g := e.grants[module]
	if g == nil {
		g = map[string]bool{}
		e.grants[module] = g
	}
	for _, a := range activities {
		g[a] = true
	}
}

// Grants returns the activities granted to a module by name or hash,
// sorted, and whether it has a grant at all.
func (h *Host) Grants(module string) ([]string, bool) {
	e := &h.emb
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.grants[module]
	return slices.Sorted(maps.Keys(g)), ok
}

// checkGrant returns an error when the module with the given hash may not
// call activity. Without a grant by hash, the grants of every name the
// module was deployed under apply (a name that moved to a newer version
// since still covers the runs of this one): a grant to any allows the
// call.
func (h *Host) checkGrant(ctx context.Context, hash, activity string) error {
	e := &h.emb
	e.mu.Lock()
	none := len(e.grants) == 0
	g, byHash := e.grants[hash]
	allowed := g[activity]
	e.mu.Unlock()
	if allowed || (none && !h.cfg.RequireGrants) {
		return nil
	}
	names := h.moduleNames(ctx, hash)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !byHash {
		byName := false
		g = map[string]bool{}
		for _, n := range names {
			gn, ok := e.grants[n]
			byName = byName || ok
			maps.Copy(g, gn)
		}
		if !byName && !h.cfg.RequireGrants || g[activity] {
			return nil
		}
	}
	label := strings.Join(names, ", ")
	if label == "" {
		label = "(unnamed)"
	}
	may := "it may call no activity"
	if len(g) > 0 {
		may = "it may call: " + strings.Join(slices.Sorted(maps.Keys(g)), ", ")
	}
	return fmt.Errorf("activity %q is not granted to module %s (%s); %s", activity, label, shortHash(hash), may)
}

// moduleNames returns the names a module was deployed under, read from
// the store (it may have been deployed under another since it was
// cached), else from the cache.
func (h *Host) moduleNames(ctx context.Context, hash string) []string {
	m, err := h.cfg.Store.ModuleInfo(ctx, hash)
	if err != nil {
		if m, err = h.modules.Info(ctx, hash); err != nil {
			return nil
		}
	}
	return m.DeployedNames
}

// EventKind says what happened to a run.
type EventKind string

// Event kinds.
const (
	// EventStarted: an execution of the run starts, the first one or one
	// that replays the run's journal (after an eviction, a suspension, a
	// restart); Event.Replay tells which.
	EventStarted EventKind = "started"
	// EventOpRecorded: the run's execution recorded an op in its journal:
	// a new op that is pending (a call in flight, a timer, a promise) or
	// an outcome (Event.Key, OpKind, Function, Status, Value or Error).
	// The record is committed to the store at the run's next idle point or
	// end, before its next suspended or final event, so a crash before
	// then loses it (the op runs again); a replay that diverges commits
	// none of its records, and one that renumbers the journal reports the
	// renumbered outcomes again.
	EventOpRecorded EventKind = "op_recorded"
	// EventSuspended: every task waits on something that will not settle
	// soon; the run is committed as suspended and its instance dropped.
	// Event.WakeAt is its earliest timer (0 when it waits only on
	// promises or child runs).
	EventSuspended EventKind = "suspended"
	// The run ended, and its status is committed: completed (Event.Result),
	// failed, canceled, or diverged from its journal (Event.Error).
	EventCompleted EventKind = "completed"
	EventFailed    EventKind = "failed"
	EventCanceled  EventKind = "canceled"
	EventDiverged  EventKind = "diverged"
	// EventContinued: the run continued as new (Event.Result is its
	// successor's input; the successor is ContinuedRunID(Event.RunID)).
	EventContinued EventKind = "continued"
)

// Event is something that happened to a run in this host. Its byte slices
// are shared with the host: do not modify them.
type Event struct {
	Kind     EventKind
	Time     time.Time
	RunID    string
	Workflow string
	Module   string // the module's sha256
	// Replay (EventStarted): the execution starts by replaying outcomes
	// recorded before.
	Replay bool
	// EventOpRecorded: the op. Status is pending, ok (Value is its JSON)
	// or error (Error is its text).
	Key      string
	OpKind   string // step, call, sleep, promise, child, cancel
	Function string // step name, activity, child workflow, or the kind
	Status   store.OutcomeStatus
	Attempts int
	Value    json.RawMessage
	// WakeAt (EventSuspended): unix ns of the earliest timer; 0 if none.
	WakeAt int64
	// Result (EventCompleted, and EventCanceled when the workflow still
	// returned a value) is the run's JSON result.
	Result json.RawMessage
	// Error: the run's error (EventFailed, EventCanceled, EventDiverged)
	// or the op's (EventOpRecorded with status error).
	Error string
}

// SubscribeOptions tune a subscription.
type SubscribeOptions struct {
	// Buffer is the capacity of the channel; default 1024. An event that
	// finds it full is dropped and counted (Subscription.Dropped).
	Buffer int
	// RunID, if set, selects the events of that run only (not those of
	// its child runs, whose ids are "{run}.{key}").
	RunID string
	// namespace, set by a namespace's view (view.go), selects the events
	// of that namespace's runs, with their run ids local.
	namespace string
}

// Subscription receives run events on C until Close.
type Subscription struct {
	// C delivers the events in the order each run produced them. It is
	// closed by Close.
	C <-chan Event

	h       *Host
	ch      chan Event
	run     string
	ns      string // SubscribeOptions.namespace
	dropped atomic.Uint64
	closed  bool // under h.emb.smu
}

// Subscribe returns a subscription to the events of the runs this host
// executes (see EventKind). The host never waits for a subscriber: it
// sends each event without blocking, and when the subscription's buffer
// is full the event is dropped and counted, so a slow subscriber loses
// events but never stalls a run. Events are for logs, metrics and user
// interfaces; the store (Inspect, Await) is the record of truth. Close the
// subscription when done (Host.Close does not).
func (h *Host) Subscribe(o SubscribeOptions) *Subscription {
	if o.Buffer <= 0 {
		o.Buffer = 1024
	}
	s := &Subscription{h: h, ch: make(chan Event, o.Buffer), run: o.RunID, ns: o.namespace}
	s.C = s.ch
	e := &h.emb
	e.smu.Lock()
	defer e.smu.Unlock()
	if e.subs == nil {
		e.subs = map[*Subscription]struct{}{}
	}
	e.subs[s] = struct{}{}
	e.nsubs.Add(1)
	return s
}

// Dropped returns how many events were dropped because C was full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close ends the subscription and closes C. Closing twice is harmless.
func (s *Subscription) Close() {
	e := &s.h.emb
	e.smu.Lock()
	defer e.smu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	delete(e.subs, s)
	e.nsubs.Add(-1)
	close(s.ch)
}

// subscribed reports whether anyone listens to events; the hot paths check
// it before they build an event.
func (h *Host) subscribed() bool { return h.emb.nsubs.Load() > 0 }

// emit sends ev to every subscription without blocking.
func (h *Host) emit(ev Event) {
	if !h.subscribed() {
		return
	}
	ev.Time = time.Now()
	e := &h.emb
	e.smu.RLock()
	defer e.smu.RUnlock()
	for s := range e.subs {
		if s.run != "" && s.run != ev.RunID {
			continue
		}
		ev := ev
		if s.ns != "" {
			ns, local := store.SplitQualified(ev.RunID)
			if ns != s.ns {
				continue
			}
			ev.RunID = local
		}
		select {
		case s.ch <- ev:
		default:
			s.dropped.Add(1)
		}
	}
}

// runEvent is an event about run r.
func runEvent(kind EventKind, r store.Run) Event {
	return Event{Kind: kind, RunID: r.ID, Workflow: r.Workflow, Module: r.ModuleHash}
}

// emitStarted reports an execution of the run that starts.
func (h *Host) emitStarted(r store.Run, replay bool) {
	if h.subscribed() {
		ev := runEvent(EventStarted, r)
		ev.Replay = replay
		h.emit(ev)
	}
}

// emitSuspended reports a run committed as suspended.
func (h *Host) emitSuspended(r store.Run) {
	if h.subscribed() {
		ev := runEvent(EventSuspended, r)
		ev.WakeAt = r.WakeAt
		h.emit(ev)
	}
}

// emitRecord reports a journal record of an execution of run r.
func (h *Host) emitRecord(r store.Run, rec sched.Record) {
	if !h.subscribed() {
		return
	}
	o := exec.ToStore(rec)
	ev := runEvent(EventOpRecorded, r)
	ev.Key, ev.OpKind, ev.Function, ev.Status, ev.Attempts = o.Key, o.Kind, o.Function, o.Status, o.Attempts
	ev.Value, ev.Error = o.Value, o.Error
	h.emit(ev)
}

// runEnded reports a run whose final status (or divergence) was just
// committed: it wakes its Await calls and emits its event.
func (h *Host) runEnded(r store.Run) {
	e := &h.emb
	e.mu.Lock()
	if w := e.waiters[r.ID]; w != nil {
		close(w.ch)
		delete(e.waiters, r.ID)
	}
	e.mu.Unlock()
	if !h.subscribed() {
		return
	}
	var ev Event
	switch r.Status {
	case store.RunCompleted:
		ev = runEvent(EventCompleted, r)
	case store.RunCanceled:
		ev = runEvent(EventCanceled, r)
	case store.RunDiverged:
		ev = runEvent(EventDiverged, r)
	case store.RunContinued:
		ev = runEvent(EventContinued, r)
	default:
		ev = runEvent(EventFailed, r)
	}
	ev.Result, ev.Error = r.Result, r.Error
	h.emit(ev)
}

// runWaiter is closed when its run ends; n counts the Await calls using it.
type runWaiter struct {
	ch chan struct{}
	n  int
}

func (e *embedState) watch(runID string) *runWaiter {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.waiters == nil {
		e.waiters = map[string]*runWaiter{}
	}
	w := e.waiters[runID]
	if w == nil {
		w = &runWaiter{ch: make(chan struct{})}
		e.waiters[runID] = w
	}
	w.n++
	return w
}

func (e *embedState) unwatch(runID string, w *runWaiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w.n--
	if w.n == 0 && e.waiters[runID] == w {
		delete(e.waiters, runID)
	}
}

// awaitPoll is how often Await reads the store when no run ends in this
// host: it catches runs that another process (or another Host on the same
// store) drives.
const awaitPoll = time.Second

// Await waits until the run has ended (completed, failed or canceled) or
// diverged, and returns it as stored; look at its Status, Result and
// Error. It does not execute the run: Work, or a Drive call, must be
// driving it (in this process, or in another one that shares the store).
// A run that ends in this host wakes Await at once; a run driven
// elsewhere is noticed within a second. It fails with ErrNotFound for an
// unknown run, and with ctx's error when ctx ends first.
func (h *Host) Await(ctx context.Context, runID string) (store.Run, error) {
	var t *time.Timer
	for {
		w := h.emb.watch(runID) // before the read: an end committed after it closes w
		r, err := h.cfg.Store.Run(ctx, runID)
		if err != nil {
			h.emb.unwatch(runID, w)
			return store.Run{}, fmt.Errorf("await %s: %w", runID, err)
		}
		if r.Status.Terminal() || r.Status == store.RunDiverged {
			h.emb.unwatch(runID, w)
			return r, nil
		}
		if t == nil {
			t = time.NewTimer(awaitPoll)
			defer t.Stop()
		} else {
			t.Reset(awaitPoll)
		}
		select {
		case <-w.ch:
		case <-t.C:
		case <-ctx.Done():
		}
		h.emb.unwatch(runID, w)
		if ctx.Err() != nil {
			return r, fmt.Errorf("await %s: %w", runID, ctx.Err())
		}
	}
}
