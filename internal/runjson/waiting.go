package runjson

import (
	"regexp"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// AddTasks fills in the remote tasks of the calls w lists, from the
// run's tasks (store.TaskStore.Tasks). A nil w stays nil.
func AddTasks(w *client.Waiting, ts []store.Task, now time.Time) {
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
		wt := &client.WaitTask{State: string(t.State), Attempt: t.Attempt, LastError: t.LastError}
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
func WaitingOf(r store.Run, outs []host.Outcome) *client.Waiting {
	switch r.Status {
	case store.RunPending, store.RunRunning, store.RunSuspended:
	default:
		return nil
	}
	w := client.Waiting{Promises: []client.WaitPromise{}, Timers: []client.WaitTimer{}, Children: []client.WaitChild{}}
	for _, o := range outs {
		if o.Status != store.OutcomePending || o.Orphaned {
			continue
		}
		switch o.Kind {
		case "promise":
			id := r.ID + "." + o.Key
			w.Promises = append(w.Promises, client.WaitPromise{ID: id, Key: o.Key, Resolve: ResolveLine(id)})
		case "sleep":
			w.Timers = append(w.Timers, client.WaitTimer{Key: o.Key, Due: o.Deadline.UTC()})
		case "child":
			w.Children = append(w.Children, client.WaitChild{Key: o.Key, Run: host.ChildRunID(r.ID, o.Key), Workflow: o.Function})
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
func waitingActivities(outs []host.Outcome) []client.WaitActivity {
	acts := []client.WaitActivity{}
	for _, o := range outs {
		if o.Status != store.OutcomePending || o.Orphaned || (o.Kind != "step" && o.Kind != "call") {
			continue
		}
		acts = append(acts, client.WaitActivity{Key: o.Key, Kind: o.Kind, Function: o.Function, Attempts: o.Attempts})
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
