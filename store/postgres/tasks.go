package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// nextTagSQL is the fair-queueing tag of the next task of run $N (the
// placeholder is given): one past the later of the clock (the latest tag
// claimed) and the run's last tag, as store/sqlite computes it, so a run
// that queues many tasks at once interleaves with the runs that queue
// after it instead of holding them back.
func nextTagSQL(run string) string {
	return `GREATEST((SELECT v FROM task_clock WHERE id = 1), coalesce((SELECT max(tag) FROM tasks WHERE run_id = ` + run + `), 0)) + 1`
}

// queueTaskSQL inserts a queued task unless its (run, key) has one.
var queueTaskSQL = `INSERT INTO tasks (run_id, key, name, input, options, timeout, attempt, state, tag, visible_at, created_at, owner, claimed_at, expiry, traceparent)
VALUES ($1, $2, $3, $4, $5, $6, $7, $10, ` + nextTagSQL("$1") + `, $8, $9, $11, $12, $13, $14)
ON CONFLICT (run_id, key) DO NOTHING`

// queueTasks queues the inserts of a batch's tasks on pb (Commit reads
// one result per task).
func queueTasks(pb *pgx.Batch, tasks []store.Task, now int64) {
	for i := range tasks {
		t := tasks[i].ForQueue()
		created := nanosOr(t.CreatedAt, now)
		visible := t.VisibleAt
		if visible == 0 {
			visible = created
		}
		pb.Queue(queueTaskSQL, t.RunID, t.Key, t.Name, t.Input, t.Options, t.Timeout, int64(t.Attempt), visible, created,
			string(t.State), t.Owner, t.ClaimedAt, t.Expiry, t.TraceParent)
	}
}

// claimTasksSQL locks the queued tasks a claim takes, in fair order,
// skipping those another transaction holds (a concurrent claim, end or
// cancellation): concurrent claims never take the same attempt.
const claimTasksSQL = `SELECT ` + rowscan.TaskColumns + `, tag FROM tasks
WHERE state = 'queued' AND name = ANY($1) AND visible_at <= $2
ORDER BY tag, seq LIMIT $3 FOR UPDATE SKIP LOCKED`

// ClaimTasks hands queued tasks to a worker. See store.TaskStore.
func (d *DB) ClaimTasks(ctx context.Context, c store.TaskClaim) ([]store.Task, error) {
	if err := c.CheckTexts(); err != nil {
		return nil, fmt.Errorf("postgres store: claim tasks: %w", err)
	}
	if c.Owner == "" || len(c.Names) == 0 || c.Max < 1 || c.TTL <= 0 {
		return nil, fmt.Errorf("postgres store: claim tasks: owner, names, max >= 1 and a positive ttl are needed")
	}
	var out []store.Task
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, claimTasksSQL, c.Names, c.Now, c.Max)
		if err != nil {
			return err
		}
		var lastTag int64
		for rows.Next() {
			t, err := rowscan.Task(tagged{rows, &lastTag}, pgx.ErrNoRows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(out) == 0 {
			return err
		}
		seqs, expiries := make([]int64, len(out)), make([]int64, len(out))
		for i := range out {
			t := &out[i]
			t.State, t.Owner, t.ClaimedAt, t.Heartbeat, t.Progress = store.TaskClaimed, c.Owner, c.Now, 0, nil
			t.Expiry = store.LeaseEnd(c.Now, c.TTL, c.Now, t.Timeout)
			seqs[i], expiries[i] = t.Seq, t.Expiry
		}
		if _, err := tx.Exec(ctx, `UPDATE tasks t SET state = 'claimed', owner = $1, claimed_at = $2, heartbeat = 0, expiry = u.expiry, progress = NULL
FROM unnest($3::bigint[], $4::bigint[]) AS u (seq, expiry) WHERE t.seq = u.seq`, c.Owner, c.Now, seqs, expiries); err != nil {
			return err
		}
		// Rows come in (tag, seq) order: the last has the latest tag. Only
		// a claim that moves the clock on locks its row, so claims that
		// do not wait for no one.
		_, err = tx.Exec(ctx, `UPDATE task_clock SET v = $1 WHERE id = 1 AND v < $1`, lastTag)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres store: claim tasks for %q: %w", c.Owner, err)
	}
	return out, nil
}

// tagged scans the task columns and then the tag.
type tagged struct {
	rows pgx.Rows
	tag  *int64
}

func (t tagged) Scan(dest ...any) error { return t.rows.Scan(append(dest, t.tag)...) }

// lockTask reads task (run, key) and locks its row until tx ends.
func lockTask(ctx context.Context, tx pgx.Tx, runID, key string) (store.Task, error) {
	t, err := rowscan.Task(tx.QueryRow(ctx, `SELECT `+rowscan.TaskColumns+` FROM tasks WHERE run_id = $1 AND key = $2 FOR UPDATE`, runID, key), pgx.ErrNoRows)
	if err != nil {
		return t, fmt.Errorf("task %s.%s: %w", runID, key, err)
	}
	return t, nil
}

// HeartbeatTask extends a claimed attempt's lease. See store.TaskStore.
func (d *DB) HeartbeatTask(ctx context.Context, runID, key string, attempt int, owner string, now int64, ttl time.Duration, progress []byte) (store.Task, error) {
	if err := store.CheckText("heartbeat: owner", owner); err != nil {
		return store.Task{}, fmt.Errorf("postgres store: heartbeat: %w", err)
	}
	var t store.Task
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if t, err = lockTask(ctx, tx, runID, key); err != nil {
			return err
		}
		if err := store.CheckTaskAttempt(t, attempt, owner, now, false); err != nil {
			return err
		}
		t.Heartbeat, t.Expiry = now, store.LeaseEnd(now, ttl, t.ClaimedAt, t.Timeout)
		if progress != nil {
			t.Progress = progress
		}
		_, err = tx.Exec(ctx, `UPDATE tasks SET heartbeat = $1, expiry = $2, progress = $3 WHERE seq = $4`, t.Heartbeat, t.Expiry, t.Progress, t.Seq)
		return err
	})
	if err != nil {
		return store.Task{}, fmt.Errorf("postgres store: heartbeat: %w", err)
	}
	return t, nil
}

// EndTask ends a task's current attempt. See store.TaskStore. A
// settlement makes its run due as Settle does: the run's row is locked
// before its waiting flag is computed again (see lockRunSQL).
func (d *DB) EndTask(ctx context.Context, e store.TaskEnd) error {
	if err := e.CheckTexts(); err != nil {
		return fmt.Errorf("postgres store: end task: %w", err)
	}
	if (e.Settle == nil) == (e.Retry == nil) {
		return fmt.Errorf("postgres store: end task %s.%s: exactly one of Settle and Retry is needed", e.RunID, e.Key)
	}
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		t, err := lockTask(ctx, tx, e.RunID, e.Key)
		if err != nil {
			return err
		}
		if err := store.CheckTaskAttempt(t, e.Attempt, e.Owner, e.Now, e.Expired); err != nil {
			return err
		}
		if r := e.Retry; r != nil {
			_, err := tx.Exec(ctx, `UPDATE tasks SET state = 'queued', attempt = attempt + 1, visible_at = $1, last_error = $2,
	heartbeat = 0, expiry = 0, tag = `+nextTagSQL("$3")+` WHERE seq = $4`, r.VisibleAt, r.Error, t.RunID, t.Seq)
			return err
		}
		s := *e.Settle
		if _, err := tx.Exec(ctx, `UPDATE tasks SET state = 'done', expiry = 0, last_error = CASE WHEN $1 = '' THEN last_error ELSE $1 END WHERE seq = $2`, s.Error, t.Seq); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, insertSettlementSQL, e.RunID, e.Key, string(s.Status), s.Value, s.Error, int64(s.Attempts), nanos(s.CreatedAt, time.Unix(0, e.Now))); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, lockRunSQL, e.RunID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, waitingSQL, e.RunID)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: end task: %w", err)
	}
	return nil
}

// CancelTasks cancels a run's open tasks. See store.TaskStore.
func (d *DB) CancelTasks(ctx context.Context, runID, reason string) error {
	if err := store.CheckText("cancel reason", reason); err != nil {
		return fmt.Errorf("postgres store: cancel tasks: %w", err)
	}
	err := d.inStmt(ctx, func() error {
		_, err := d.pool.Exec(ctx, `UPDATE tasks SET state = 'canceled', last_error = $1, expiry = 0
WHERE run_id = $2 AND state IN ('queued', 'claimed')`, reason, runID)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: cancel tasks of %s: %w", runID, err)
	}
	return nil
}

// ExpiredTasks lists claimed tasks whose lease ended. See store.TaskStore.
func (d *DB) ExpiredTasks(ctx context.Context, now int64, limit int) ([]store.Task, error) {
	return d.tasks(ctx, "expired tasks", `state = 'claimed' AND expiry <= $1 ORDER BY expiry, seq LIMIT $2`, now, max(limit, 1))
}

// Tasks lists a run's tasks. See store.TaskStore.
func (d *DB) Tasks(ctx context.Context, runID string) ([]store.Task, error) {
	return d.tasks(ctx, "tasks of "+runID, `run_id = $1 ORDER BY seq`, runID)
}

// Task returns one task of a run. See store.TaskStore.
func (d *DB) Task(ctx context.Context, runID, key string) (store.Task, error) {
	ts, err := d.tasks(ctx, "task "+runID+"."+key, `run_id = $1 AND key = $2`, runID, key)
	return store.One(ts, err, "postgres store: task "+runID+"."+key)
}

func (d *DB) tasks(ctx context.Context, what, where string, args ...any) ([]store.Task, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: %s: %w", what, err)
	}
	if unstorableArgs(args) {
		return nil, nil
	}
	rows, err := d.pool.Query(ctx, `SELECT `+rowscan.TaskColumns+` FROM tasks WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %s: %w", what, d.wrapClosed(err))
	}
	defer rows.Close()
	var out []store.Task
	for rows.Next() {
		t, err := rowscan.Task(rows, pgx.ErrNoRows)
		if err != nil {
			return nil, fmt.Errorf("postgres store: %s: %w", what, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: %s: %w", what, d.wrapClosed(err))
	}
	return out, nil
}

// TaskQueues counts open tasks by name. See store.TaskStore.
func (d *DB) TaskQueues(ctx context.Context) ([]store.TaskQueue, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: task queues: %w", err)
	}
	rows, err := d.pool.Query(ctx, `SELECT name, count(*) FILTER (WHERE state = 'queued'), count(*) FILTER (WHERE state = 'claimed')
FROM tasks WHERE state IN ('queued', 'claimed') GROUP BY name ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("postgres store: task queues: %w", d.wrapClosed(err))
	}
	defer rows.Close()
	var out []store.TaskQueue
	for rows.Next() {
		var q store.TaskQueue
		if err := rows.Scan(&q.Name, &q.Queued, &q.Claimed); err != nil {
			return nil, fmt.Errorf("postgres store: task queues: %w", err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: task queues: %w", d.wrapClosed(err))
	}
	return out, nil
}
