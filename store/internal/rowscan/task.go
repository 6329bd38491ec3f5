package rowscan

import (
	"errors"
	"time"

	"github.com/skeinrun/skein/store"
)

// TaskColumns are the columns of tasks that Task reads, in order.
const TaskColumns = `seq, run_id, key, name, input, options, timeout, attempt, state, visible_at, owner, claimed_at, heartbeat, expiry, progress, last_error, created_at, traceparent`

// Task reads a row of TaskColumns. A missing row (an error that is
// noRows) is store.ErrNotFound.
func Task(s Scanner, noRows error) (store.Task, error) {
	var t store.Task
	var state string
	var created int64
	err := s.Scan(&t.Seq, &t.RunID, &t.Key, &t.Name, &t.Input, &t.Options, &t.Timeout, &t.Attempt, &state,
		&t.VisibleAt, &t.Owner, &t.ClaimedAt, &t.Heartbeat, &t.Expiry, &t.Progress, &t.LastError, &created, &t.TraceParent)
	if errors.Is(err, noRows) {
		return store.Task{}, store.ErrNotFound
	}
	if err != nil {
		return store.Task{}, err
	}
	t.State = store.TaskState(state)
	t.CreatedAt = time.Unix(0, created)
	return t, nil
}
