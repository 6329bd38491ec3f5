package main

import (
	"fmt"
	"io"
	"time"

	"github.com/skeinrun/skein/client"
)

// printWaiting prints what a run waits on (runjson.WaitingOf): every
// pending promise with its full id and the `skein resolve` line that
// settles it, every timer with its due time, every child run and every
// activity. Nothing when w is nil.
func printWaiting(out io.Writer, w *client.Waiting, now time.Time) {
	if w == nil {
		return
	}
	fmt.Fprintln(out, "\nwaiting on:")
	for _, p := range w.Promises {
		fmt.Fprintf(out, "  promise %s: settle it with\n    %s   (or --error 'TEXT')\n", printable(p.ID), printable(p.Resolve))
	}
	for _, t := range w.Timers {
		fmt.Fprintf(out, "  timer %s: due %s (%s)\n", printable(t.Key), t.Due.Format(time.RFC3339), dueIn(t.Due, now))
	}
	for _, c := range w.Children {
		fmt.Fprintf(out, "  child run %s (workflow %s): skein status %s\n", printable(c.Run), printable(c.Workflow), printable(c.Run))
	}
	printWaitingActivities(out, w.Activities)
}

// printWaitingActivities prints the activities a run waits on: one line
// each, with the attempts started so far.
func printWaitingActivities(out io.Writer, acts []client.WaitActivity) {
	for _, a := range acts {
		what := "attempt"
		if a.Attempts != 1 {
			what = "attempts"
		}
		if a.Task != nil {
			printWaitingTask(out, a)
			continue
		}
		fmt.Fprintf(out, "  %s %s (key %s): %d %s so far\n", a.Kind, printable(a.Function), printable(a.Key), a.Attempts, what)
	}
}

// printWaitingTask prints a remote activity call: queued for a worker (or
// for its retry), or which worker holds it, since when, its last
// heartbeat; and the previous attempt's error.
func printWaitingTask(out io.Writer, a client.WaitActivity) {
	t := a.Task
	where := "waiting for a worker"
	switch {
	case t.State == "claimed":
		where = "held by worker " + printable(t.Worker)
		if t.ClaimedAt != nil {
			where += " since " + t.ClaimedAt.Format(time.RFC3339Nano)
		}
		if t.Heartbeat != nil {
			where += ", last heartbeat " + t.Heartbeat.Format(time.RFC3339Nano)
		}
	case t.RetryAt != nil:
		where = "retry at " + t.RetryAt.Format(time.RFC3339Nano)
	}
	fmt.Fprintf(out, "  activity %s (key %s): attempt %d, %s\n", printable(a.Function), printable(a.Key), t.Attempt, where)
	if t.LastError != "" {
		fmt.Fprintf(out, "    last error: %s\n", printable(t.LastError))
	}
}

// dueIn says when a timer is due, relative to now.
func dueIn(due, now time.Time) string {
	d := due.Sub(now).Round(time.Second)
	if d <= 0 {
		return "due now"
	}
	return "in " + d.String()
}
