package storetest

import (
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// The activity task operations of the differential test.

// diffTaskTime is the unix ns of diffTS(0) plus n seconds: the clock of
// the task operations.
func diffTaskTime(n int) int64 { return diffTS(0).UnixNano() + int64(n)*int64(time.Second) }

var diffTaskNames = []string{"n1", "n2"}

// batchTasks returns 0 to 2 tasks to queue in a batch. Their creation
// time is never zero: a task's VisibleAt defaults to it.
func (d *differ) batchTasks() []store.Task {
	var out []store.Task
	for range d.rng.IntN(3) {
		t := store.Task{RunID: d.runID(), Key: pick(d.rng, diffKeys), Name: pick(d.rng, diffTaskNames), Input: d.value(),
			Options: d.value(), Timeout: int64(d.rng.IntN(3)) * int64(time.Second), CreatedAt: diffTS(d.rng.IntN(3))}
		if d.rng.IntN(2) == 0 {
			t.VisibleAt = diffTaskTime(d.rng.IntN(6))
		}
		out = append(out, t)
	}
	return out
}

func (d *differ) ttl() time.Duration { return time.Duration(1+d.rng.IntN(3)) * time.Second }

// taskStep applies one random task operation to both stores.
func (d *differ) taskStep(what func(string, ...any) string) {
	ctx, rng := d.t.Context(), d.rng
	id, key, now := d.runID(), pick(rng, diffKeys), diffTaskTime(rng.IntN(8))
	owner := pick(rng, []string{"w1", "w2"})
	switch rng.IntN(6) {
	case 0, 1:
		c := store.TaskClaim{Owner: owner, Names: diffTaskNames[rng.IntN(2):][:1], Max: 1 + rng.IntN(3), Now: now, TTL: d.ttl()}
		if rng.IntN(3) == 0 {
			c.Names = diffTaskNames
		}
		t1, err1 := d.got.ClaimTasks(ctx, c)
		t2, err2 := d.ref.ClaimTasks(ctx, c)
		d.compare(what("ClaimTasks", c), noSeq(t1), err1, noSeq(t2), err2)
	case 2:
		attempt, ttl, progress := 1+rng.IntN(2), d.ttl(), d.value()
		id, key, attempt, owner = d.target(id, key, attempt, owner)
		t1, err1 := d.got.HeartbeatTask(ctx, id, key, attempt, owner, now, ttl, progress)
		t2, err2 := d.ref.HeartbeatTask(ctx, id, key, attempt, owner, now, ttl, progress)
		d.compare(what("HeartbeatTask", id, key, attempt, owner, now, ttl, string(progress)), noSeq([]store.Task{t1}), err1, noSeq([]store.Task{t2}), err2)
	case 3:
		id, key, attempt, owner := d.target(id, key, 1+rng.IntN(2), owner)
		e := store.TaskEnd{RunID: id, Key: key, Attempt: attempt, Owner: pick(rng, []string{"", owner}), Expired: rng.IntN(3) == 0, Now: now}
		if rng.IntN(2) == 0 {
			e.Settle = &store.Settlement{Status: pick(rng, diffOutcomeStatuses[1:]), Value: d.value(), Error: pick(rng, []string{"", "bad"}), Attempts: rng.IntN(3)}
		} else {
			e.Retry = &store.TaskRetry{Error: pick(rng, []string{"", "flaky"}), VisibleAt: diffTaskTime(rng.IntN(8))}
		}
		d.compareErr(what("EndTask", fmt.Sprintf("%+v settle %v retry %v", e, e.Settle, e.Retry)), d.got.EndTask(ctx, e), d.ref.EndTask(ctx, e))
	case 4:
		limit := rng.IntN(4)
		t1, err1 := d.got.ExpiredTasks(ctx, now, limit)
		t2, err2 := d.ref.ExpiredTasks(ctx, now, limit)
		d.compare(what("ExpiredTasks", now, limit), noSeq(t1), err1, noSeq(t2), err2)
	case 5:
		reason := pick(rng, []string{"stop", "ended"})
		d.compareErr(what("CancelTasks", id, reason), d.got.CancelTasks(ctx, id, reason), d.ref.CancelTasks(ctx, id, reason))
	}
}

// target returns, one time in two, the run, key, attempt and owner of a
// claimed task of the reference store (if it has one), and otherwise the
// ones given: heartbeats and ends that hold the lease are not left to
// chance.
func (d *differ) target(id, key string, attempt int, owner string) (string, string, int, string) {
	if d.rng.IntN(2) == 0 {
		return id, key, attempt, owner
	}
	var claimed []store.Task
	for _, run := range diffRuns {
		ts, err := d.ref.Tasks(d.t.Context(), run)
		if err != nil {
			d.t.Fatalf("Tasks(%s) of %s: %v", run, d.refName, err)
		}
		for _, t := range ts {
			if t.State == store.TaskClaimed {
				claimed = append(claimed, t)
			}
		}
	}
	if len(claimed) == 0 {
		return id, key, attempt, owner
	}
	t := pick(d.rng, claimed)
	return t.RunID, t.Key, t.Attempt, t.Owner
}

// compareTasks compares the tasks of every run and the queues.
func (d *differ) compareTasks(what string) {
	ctx := d.t.Context()
	for _, id := range append(diffRuns, "ghost") {
		t1, err1 := d.got.Tasks(ctx, id)
		t2, err2 := d.ref.Tasks(ctx, id)
		d.compare(what+": Tasks "+id, noSeq(t1), err1, noSeq(t2), err2)
	}
	q1, err1 := d.got.TaskQueues(ctx)
	q2, err2 := d.ref.TaskQueues(ctx)
	d.compare(what+": TaskQueues", q1, err1, q2, err2)
}

// noSeq returns tasks without their Seq: Postgres's sequence also counts
// inserts that found their task there already, or that rolled back, so
// its values differ from SQLite's (their order does not).
func noSeq(tasks []store.Task) []store.Task {
	out := make([]store.Task, len(tasks))
	for i, t := range tasks {
		t.Seq = 0
		out[i] = t
	}
	return out
}
