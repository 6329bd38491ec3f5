package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// The statements of the task writes (prepared once: namedSQL).
const (
	queueTaskSQL = `INSERT INTO tasks (run_id, key, name, input, options, timeout, attempt, state, tag, visible_at, created_at, owner, claimed_at, expiry, traceparent)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?10, ` + nextTagSQL1 + `, ?8, ?9, ?11, ?12, ?13, ?14 WHERE true
ON CONFLICT (run_id, key) DO NOTHING`
	// claimTasksSQL claims up to ?5 queued tasks of the names in the JSON
	// array ?4 for owner ?1 at ?2 with lease ttl ?3 (capped by a task's
	// timeout, as store.LeaseEnd), lowest tags first.
	claimTasksSQL = `UPDATE tasks SET state = 'claimed', owner = ?1, claimed_at = ?2, heartbeat = 0, progress = NULL,
	expiry = CASE WHEN timeout > 0 AND timeout < ?3 THEN ?2 + timeout ELSE ?2 + ?3 END
WHERE seq IN (SELECT seq FROM tasks WHERE state = 'queued' AND name IN (SELECT value FROM json_each(?4)) AND visible_at <= ?2
	ORDER BY tag, seq LIMIT ?5)
RETURNING ` + rowscan.TaskColumns + `, tag`
	claimableSQL = `SELECT 1 FROM tasks WHERE state = 'queued' AND name IN (SELECT value FROM json_each(?1)) AND visible_at <= ?2 LIMIT 1`
	moveClockSQL = `UPDATE task_clock SET v = ?1 WHERE id = 1 AND v < ?1`
	taskRowSQL   = `SELECT ` + rowscan.TaskColumns + ` FROM tasks WHERE run_id = ? AND key = ?`
	heartbeatSQL = `UPDATE tasks SET heartbeat = ?, expiry = ?, progress = ? WHERE seq = ?`
	retryTaskSQL = `UPDATE tasks SET state = 'queued', attempt = attempt + 1, visible_at = ?2, last_error = ?3,
	heartbeat = 0, expiry = 0, tag = ` + nextTagSQL1 + ` WHERE seq = ?4`
	endTaskSQL     = `UPDATE tasks SET state = 'done', expiry = 0, last_error = CASE WHEN ?1 = '' THEN last_error ELSE ?1 END WHERE seq = ?2`
	cancelTasksSQL = `UPDATE tasks SET state = 'canceled', last_error = ?, expiry = 0
WHERE run_id = ? AND state IN ('queued', 'claimed')`
)

// nextTagSQL1 is the fair-queueing tag of the next task of the run named
// by parameter ?1: one past the later of the clock (the latest tag
// claimed) and the run's last tag, so a run that queues many tasks at once
// interleaves with the runs that queue after it instead of holding them
// back.
const nextTagSQL1 = `max((SELECT v FROM task_clock WHERE id = 1), coalesce((SELECT max(tag) FROM tasks WHERE run_id = ?1), 0)) + 1`

// queueTasks inserts the tasks of a batch, each unless its (run, key)
// has one already.
func queueTasks(w *wtx, tasks []store.Task, now int64) error {
	for i := range tasks {
		t := tasks[i].ForQueue()
		created := nanosOr(t.CreatedAt, now)
		visible := t.VisibleAt
		if visible == 0 {
			visible = created
		}
		_, err := w.stmt(sqlQueueTask).ExecContext(w.ctx, t.RunID, t.Key, t.Name, t.Input, t.Options, t.Timeout, t.Attempt, visible, created,
			string(t.State), t.Owner, t.ClaimedAt, t.Expiry, t.TraceParent)
		if err != nil {
			return fmt.Errorf("queue task %s.%s: %w", t.RunID, t.Key, err)
		}
	}
	return nil
}

// ClaimTasks hands queued tasks to a worker. See store.TaskStore.
func (d *DB) ClaimTasks(ctx context.Context, c store.TaskClaim) ([]store.Task, error) {
	if err := c.CheckTexts(); err != nil {
		return nil, fmt.Errorf("sqlite store: claim tasks: %w", err)
	}
	if c.Owner == "" || len(c.Names) == 0 || c.Max < 1 || c.TTL <= 0 {
		return nil, fmt.Errorf("sqlite store: claim tasks: owner, names, max >= 1 and a positive ttl are needed")
	}
	names, err := json.Marshal(c.Names)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: claim tasks: %w", err)
	}
	// A claim that finds nothing (most long-poll wake-ups of a worker that
	// is not the one to get the task) costs a read, not a write.
	var any int
	err = d.rd[readClaimable].QueryRowContext(ctx, string(names), c.Now).Scan(&any)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite store: claim tasks for %q: %w", c.Owner, err)
	}
	var out []store.Task
	err = d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		out = out[:0] // the request may run again after a rollback
		rows, err := w.stmt(sqlClaimTasks).QueryContext(w.ctx, c.Owner, c.Now, int64(c.TTL), string(names), c.Max)
		if err != nil {
			return err
		}
		var got []taggedTask
		for rows.Next() {
			var tt taggedTask
			if tt.t, err = rowscan.Task(tagged{rows, &tt.tag}, sql.ErrNoRows); err != nil {
				rows.Close()
				return err
			}
			got = append(got, tt)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// In claim order (RETURNING has none).
		slices.SortFunc(got, func(a, b taggedTask) int { return cmp.Or(cmp.Compare(a.tag, b.tag), cmp.Compare(a.t.Seq, b.t.Seq)) })
		for _, tt := range got {
			out = append(out, tt.t)
		}
		if len(got) > 0 {
			_, err = w.stmt(sqlMoveClock).ExecContext(w.ctx, got[len(got)-1].tag)
		}
		return err
	}})
	if err != nil {
		return nil, fmt.Errorf("sqlite store: claim tasks for %q: %w", c.Owner, err)
	}
	return out, nil
}

// taggedTask is a claimed task and its fair-queueing tag.
type taggedTask struct {
	t   store.Task
	tag int64
}

// tagged scans the task columns and then the tag.
type tagged struct {
	rows *rawRows
	tag  *int64
}

func (t tagged) Scan(dest ...any) error { return t.rows.Scan(append(dest, t.tag)...) }

// taskRow reads one task inside the writer's transaction.
func taskRow(w *wtx, runID, key string) (store.Task, error) {
	t, err := rowscan.Task(w.stmt(sqlTaskRow).QueryRowContext(w.ctx, runID, key), sql.ErrNoRows)
	if err != nil {
		return t, fmt.Errorf("task %s.%s: %w", runID, key, err)
	}
	return t, nil
}

// HeartbeatTask extends a claimed attempt's lease. See store.TaskStore.
func (d *DB) HeartbeatTask(ctx context.Context, runID, key string, attempt int, owner string, now int64, ttl time.Duration, progress []byte) (store.Task, error) {
	if err := store.CheckText("heartbeat: owner", owner); err != nil {
		return store.Task{}, fmt.Errorf("sqlite store: heartbeat: %w", err)
	}
	var t store.Task
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var err error
		if t, err = taskRow(w, runID, key); err != nil {
			return err
		}
		if err := store.CheckTaskAttempt(t, attempt, owner, now, false); err != nil {
			return err
		}
		t.Heartbeat, t.Expiry = now, store.LeaseEnd(now, ttl, t.ClaimedAt, t.Timeout)
		if progress != nil {
			t.Progress = progress
		}
		_, err = w.stmt(sqlHeartbeat).ExecContext(w.ctx, t.Heartbeat, t.Expiry, t.Progress, t.Seq)
		return err
	}})
	if err != nil {
		return store.Task{}, fmt.Errorf("sqlite store: heartbeat: %w", err)
	}
	return t, nil
}

// EndTask ends a task's current attempt. See store.TaskStore.
func (d *DB) EndTask(ctx context.Context, e store.TaskEnd) error {
	if err := e.CheckTexts(); err != nil {
		return fmt.Errorf("sqlite store: end task: %w", err)
	}
	if (e.Settle == nil) == (e.Retry == nil) {
		return fmt.Errorf("sqlite store: end task %s.%s: exactly one of Settle and Retry is needed", e.RunID, e.Key)
	}
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		t, err := taskRow(w, e.RunID, e.Key)
		if err != nil {
			return err
		}
		if err := store.CheckTaskAttempt(t, e.Attempt, e.Owner, e.Now, e.Expired); err != nil {
			return err
		}
		if r := e.Retry; r != nil {
			_, err := w.stmt(sqlRetryTask).ExecContext(w.ctx, t.RunID, r.VisibleAt, r.Error, t.Seq)
			return err
		}
		s := *e.Settle
		s.RunID, s.Key = e.RunID, e.Key
		if _, err := w.stmt(sqlEndTask).ExecContext(w.ctx, s.Error, t.Seq); err != nil {
			return err
		}
		if err := insertSettlement(w, &s, e.Now); err != nil {
			return err
		}
		return updateWaiting(w, e.RunID)
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: end task: %w", err)
	}
	return nil
}

// CancelTasks cancels a run's open tasks. See store.TaskStore.
func (d *DB) CancelTasks(ctx context.Context, runID, reason string) error {
	if err := store.CheckText("cancel reason", reason); err != nil {
		return fmt.Errorf("sqlite store: cancel tasks: %w", err)
	}
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		_, err := w.stmt(sqlCancelTasks).ExecContext(w.ctx, reason, runID)
		return err
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: cancel tasks of %s: %w", runID, err)
	}
	return nil
}

// ExpiredTasks lists claimed tasks whose lease ended. See store.TaskStore.
func (d *DB) ExpiredTasks(ctx context.Context, now int64, limit int) ([]store.Task, error) {
	return d.tasks(ctx, "expired tasks", readExpiredTasks, now, max(limit, 1))
}

// Tasks lists a run's tasks. See store.TaskStore.
func (d *DB) Tasks(ctx context.Context, runID string) ([]store.Task, error) {
	return d.tasks(ctx, "tasks of "+runID, readTasks, runID)
}

// Task returns one task of a run. See store.TaskStore.
func (d *DB) Task(ctx context.Context, runID, key string) (store.Task, error) {
	ts, err := d.tasks(ctx, "task "+runID+"."+key, readTask, runID, key)
	return store.One(ts, err, "sqlite store: task "+runID+"."+key)
}

// tasks runs the read q of readSQL and returns its tasks.
func (d *DB) tasks(ctx context.Context, what string, q readID, args ...any) ([]store.Task, error) {
	rows, err := d.rd[q].QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: %s: %w", what, err)
	}
	defer rows.Close()
	var out []store.Task
	for rows.Next() {
		t, err := rowscan.Task(rows, sql.ErrNoRows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: %s: %w", what, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: %s: %w", what, err)
	}
	return out, nil
}

// TaskQueues counts open tasks by name. See store.TaskStore.
func (d *DB) TaskQueues(ctx context.Context) ([]store.TaskQueue, error) {
	rows, err := d.rdb.QueryContext(ctx, `SELECT name, sum(state = 'queued'), sum(state = 'claimed') FROM tasks
WHERE state IN ('queued', 'claimed') GROUP BY name ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: task queues: %w", err)
	}
	defer rows.Close()
	var out []store.TaskQueue
	for rows.Next() {
		var q store.TaskQueue
		if err := rows.Scan(&q.Name, &q.Queued, &q.Claimed); err != nil {
			return nil, fmt.Errorf("sqlite store: task queues: %w", err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: task queues: %w", err)
	}
	return out, nil
}
