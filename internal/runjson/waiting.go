package runjson

import (
	"regexp"
	"strings"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Waiting is what a run that has not ended waits on: its pending
// promises (each with its full id and a `skein resolve` line to paste),
// timers (with their due time), child runs, and activities (step bodies
// and host activity calls not settled yet). Orphaned records, which the
// run's current code no longer reaches, are left out.
type Waiting struct {
	Promises   []WaitPromise  `json:"promises"`
	Timers     []WaitTimer    `json:"timers"`
	Children   []WaitChild    `json:"children"`
	Activities []WaitActivity `json:"activities"`
}

// WaitPromise is a pending external promise.
type WaitPromise struct {
	ID      string `json:"id"`      // the full id {run}.{key} that settles it
	Key     string `json:"key"`     // its key in the run
	Resolve string `json:"resolve"` // the command that settles it, to paste (replace JSON)
}

// WaitTimer is a pending durable timer (skein.Sleep).
type WaitTimer struct {
	Key string    `json:"key"`
	Due time.Time `json:"due"`
}

// WaitChild is a pending child run.
type WaitChild struct {
	Key      string `json:"key"`
	Run      string `json:"run"` // the child run's id
	Workflow string `json:"workflow"`
}

// WaitActivity is a step body or host activity call that has not
// settled: running, or waiting for its next attempt.
type WaitActivity struct {
	Key      string `json:"key"`
	Kind     string `json:"kind"`     // step or call
	Function string `json:"function"` // the step's or activity's name
	Attempts int    `json:"attempts"` // attempts started so far
	// Task is the remote activity task of a call that a worker serves
	// (docs/activities.md); omitted for the others.
	Task *WaitTask `json:"task,omitempty"`
}

// WaitTask is where a remote activity call stands: queued for a worker
// (or for its retry's backoff), or held by one.
type WaitTask struct {
	State     string     `json:"state"` // queued or claimed
	Attempt   int        `json:"attempt"`
	Worker    string     `json:"worker,omitempty"` // while claimed
	ClaimedAt *time.Time `json:"claimed_at,omitempty"`
	Heartbeat *time.Time `json:"heartbeat_at,omitempty"`
	RetryAt   *time.Time `json:"retry_at,omitempty"` // a queued retry waits until then
	LastError string     `json:"last_error,omitempty"`
}

// AddTasks fills in the remote tasks of the calls w lists, from the
// run's tasks (store.TaskStore.Tasks). A nil w stays nil.
func (w *Waiting) AddTasks(ts []store.Task, now time.Time) {
	if w == nil {
		return
	}
	by := map[string]store.Task{}
	for _, t := range ts {
		if t.State == store.TaskQueued || t.State == store.TaskClaimed {
			by[t.Key] = t
		}
	}
	for i := range w.Activities {
		a := &w.Activities[i]
		t, ok := by[a.Key]
		if !ok || a.Kind != "call" {
			continue
		}
		wt := &WaitTask{State: string(t.State), Attempt: t.Attempt, LastError: t.LastError}
		if t.State == store.TaskClaimed {
			wt.Worker, wt.ClaimedAt, wt.Heartbeat = t.Owner, timeOf(t.ClaimedAt), timeOf(t.Heartbeat)
		} else if t.VisibleAt > now.UnixNano() {
			wt.RetryAt = timeOf(t.VisibleAt)
		}
		a.Task = wt
	}
}

func timeOf(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

// WaitingOf lists what run r waits on, from its outcomes; nil when the
// run has ended (or diverged) or waits on nothing.
func WaitingOf(r store.Run, outs []host.Outcome) *Waiting {
	switch r.Status {
	case store.RunPending, store.RunRunning, store.RunSuspended:
	default:
		return nil
	}
	w := Waiting{Promises: []WaitPromise{}, Timers: []WaitTimer{}, Children: []WaitChild{}}
	for _, o := range outs {
		if o.Status != store.OutcomePending || o.Orphaned {
			continue
		}
		switch o.Kind {
		case "promise":
			id := r.ID + "." + o.Key
			w.Promises = append(w.Promises, WaitPromise{ID: id, Key: o.Key, Resolve: ResolveLine(id)})
		case "sleep":
			w.Timers = append(w.Timers, WaitTimer{Key: o.Key, Due: o.Deadline.UTC()})
		case "child":
			w.Children = append(w.Children, WaitChild{Key: o.Key, Run: host.ChildRunID(r.ID, o.Key), Workflow: o.Function})
		}
	}
	w.Activities = waitingActivities(outs)
	if len(w.Promises)+len(w.Timers)+len(w.Children)+len(w.Activities) == 0 {
		return nil
	}
	return &w
}

// waitingActivities lists the activities a run waits on: the pending
// step and call records of its outcome table. This is the one place to
// add activities known elsewhere (remote activity tasks in the store,
// with their workers and last errors): status, inspect, `skein run` and
// the web UI all show what it returns.
func waitingActivities(outs []host.Outcome) []WaitActivity {
	acts := []WaitActivity{}
	for _, o := range outs {
		if o.Status != store.OutcomePending || o.Orphaned || (o.Kind != "step" && o.Kind != "call") {
			continue
		}
		acts = append(acts, WaitActivity{Key: o.Key, Kind: o.Kind, Function: o.Function, Attempts: o.Attempts})
	}
	return acts
}

// shellSafe matches what needs no quotes in a POSIX shell.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9._:/@%+=,-]+$`)

// ResolveLine is the `skein resolve` command that settles the promise
// with full id id; JSON stands for the value to settle it with.
func ResolveLine(id string) string {
	q := id
	if !shellSafe.MatchString(id) {
		q = "'" + strings.ReplaceAll(id, "'", `'\''`) + "'"
	}
	return "skein resolve " + q + " --value 'JSON'"
}
