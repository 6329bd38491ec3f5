package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skeinrun/skein/store/internal/rowscan"

	"github.com/skeinrun/skein/store"
)

// PutModule stores m. Storing a hash again keeps the first record; a
// non-empty m.Name is pointed at m.Hash (moved from the module it named)
// and every other name is left as it is. A zero m.CreatedAt is set to
// now. It costs one queued write.
func (d *DB) PutModule(ctx context.Context, m store.Module) error {
	if err := m.CheckTexts(); err != nil {
		return fmt.Errorf("sqlite store: put module: %w", err)
	}
	if m.Hash == "" {
		return errors.New("sqlite store: put module: empty hash")
	}
	wf := m.Workflows
	if wf == nil {
		wf = []string{}
	}
	workflows, err := json.Marshal(wf)
	if err != nil {
		return fmt.Errorf("sqlite store: put module %s: encode workflows: %w", m.Hash, err)
	}
	schemas, err := rowscan.InputSchemas(m.InputSchemas)
	if err != nil {
		return fmt.Errorf("sqlite store: put module %s: encode input schemas: %w", m.Hash, err)
	}
	bytes := m.Bytes
	if bytes == nil {
		bytes = []byte{}
	}
	created := nanos(m.CreatedAt, time.Now())
	err = d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		if _, err := w.tx.ExecContext(w.ctx, `
INSERT INTO module_bytes (hash, bytes) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`, m.Hash, bytes); err != nil {
			return err
		}
		if _, err := w.tx.ExecContext(w.ctx, `
INSERT INTO modules (hash, size, abi_version, workflows, created_at, input_schemas)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING`,
			m.Hash, len(bytes), m.ABIVersion, string(workflows), created, schemas); err != nil {
			return err
		}
		if _, err := w.tx.ExecContext(w.ctx, `
INSERT INTO module_owners (namespace, hash) VALUES (?, ?) ON CONFLICT DO NOTHING`, m.Owner(), m.Hash); err != nil {
			return err
		}
		if m.Name == "" {
			return nil
		}
		_, err := w.tx.ExecContext(w.ctx, `
INSERT INTO module_names (name, hash, seq) VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM module_names))
ON CONFLICT (name, hash) DO UPDATE SET seq = excluded.seq`, m.Name, m.Hash)
		return err
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: put module %s: %w", m.Hash, err)
	}
	return nil
}

// CreateRun inserts r unless a run with r.ID exists, and returns the run as
// stored and whether this call created it. An empty r.Status is stored as
// pending; zero CreatedAt and UpdatedAt are set to now. It costs one queued
// write.
func (d *DB) CreateRun(ctx context.Context, r store.Run) (store.Run, bool, error) {
	if err := r.CheckTexts(); err != nil {
		return store.Run{}, false, fmt.Errorf("sqlite store: create run: %w", err)
	}
	c, created, err := d.createRun(ctx, r, "", 0, 0)
	return c.Run, created, err
}

// CreateClaimedRun creates a run claimed by owner. See store.Store.
func (d *DB) CreateClaimedRun(ctx context.Context, r store.Run, owner string, now int64, ttl time.Duration) (store.ClaimedRun, bool, error) {
	if err := r.CheckTexts(); err != nil {
		return store.ClaimedRun{}, false, fmt.Errorf("sqlite store: create run: %w", err)
	}
	if err := store.CheckClaim(owner, ttl); err != nil {
		return store.ClaimedRun{}, false, fmt.Errorf("sqlite store: create run %s: %w", r.ID, err)
	}
	return d.createRun(ctx, r, owner, now, ttl)
}

// createRun inserts r unless it exists and, if owner is set and r is
// new, claims it for owner, in one queued write.
func (d *DB) createRun(ctx context.Context, r store.Run, owner string, now int64, ttl time.Duration) (store.ClaimedRun, bool, error) {
	if r.ID == "" {
		return store.ClaimedRun{}, false, errors.New("sqlite store: create run: empty id")
	}
	r = r.ForCreate(time.Now())

	var out store.ClaimedRun
	var created bool
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var err error
		if created, err = insertRun(w, &r); err != nil {
			return err
		}
		if !created {
			out.Run, err = scanRun(w.stmt(sqlRunRow).QueryRowContext(w.ctx, r.ID))
			return err
		}
		r.Attrs = nil // written; reads leave it nil (store.Run.Attrs)
		out.Run = r
		if r.Status == store.RunSuspended && r.Cancel != "" {
			// Created with a cancellation waiting to be delivered.
			if err := updateWaiting(w, r.ID); err != nil {
				return err
			}
		}
		if owner != "" {
			out, err = claim(w, r, owner, now, now+int64(ttl))
		}
		return err
	}})
	if err != nil {
		return store.ClaimedRun{}, false, fmt.Errorf("sqlite store: create run %s: %w", r.ID, err)
	}
	return out, created, nil
}

const insertRunSQL = `
INSERT INTO runs (id, module_hash, workflow, input, status, result, error, seed, parent, start_time, wake_at, deadline, cancel, created_at, updated_at, parent_close, abandoned, traceparent, reset_from, reset_key)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO NOTHING`

// updateRunSQL and updateRunStatusSQL write a run update of a batch
// (applyBatch). SQLite rewrites an index entry whenever its column is
// assigned, changed or not; status and wake_at are in four indexes of
// runs and most updates (a commit of a running run) leave both as they
// are, so they are assigned apart, only where they change.
const (
	updateRunSQL       = `UPDATE runs SET module_hash = ?, result = ?, error = ?, updated_at = ? WHERE id = ?`
	updateRunStatusSQL = `UPDATE runs SET status = ?1, wake_at = ?2 WHERE id = ?3 AND (status IS NOT ?1 OR wake_at IS NOT ?2)`
)

// insertRun inserts r (as ForCreate left it) unless a run with its id
// exists, and reports whether it did.
func insertRun(w *wtx, r *store.Run) (bool, error) {
	res, err := w.stmt(sqlInsertRun).ExecContext(w.ctx,
		r.ID, r.ModuleHash, r.Workflow, r.Input, string(r.Status), r.Result, r.Error,
		int64(r.Seed), r.Parent, r.StartTime, r.WakeAt, r.Deadline, r.Cancel, r.CreatedAt.UnixNano(), r.UpdatedAt.UnixNano(),
		string(r.ParentClose), rowscan.Int(r.Abandoned), r.TraceParent, r.ResetFrom, r.ResetKey)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 1 {
		err = writeAttrs(w, r.ID, r.Attrs)
	}
	return n == 1, err
}

// createRuns inserts the runs a batch creates; one that exists fails it.
func createRuns(w *wtx, creates []store.Run, now int64) error {
	for i := range creates {
		r := creates[i].ForCreate(time.Unix(0, now))
		if r.ID == "" {
			return errors.New("create run: empty id")
		}
		created, err := insertRun(w, &r)
		if err != nil {
			return fmt.Errorf("create run %s: %w", r.ID, err)
		}
		if !created {
			return store.CreateConflictError(r.ID)
		}
	}
	return nil
}

// Commit applies b atomically, after every write queued before it, and
// returns once it is committed (durable per Options.Durability).
// Concurrent commits share one transaction (one fsync in strict mode), and
// their outcome rows are written up to 32 per statement. An outcome of an unknown run
// fails the batch (foreign key), as does an update of an unknown run
// (wrapping store.ErrNotFound); a failed batch leaves no trace and does not
// affect batches committed alongside it. A zero UpdatedAt (on an outcome
// or a run) is stored as now. If ctx ends before the writer takes the
// batch up, the batch is dropped and ctx's error returned. A fenced batch
// (b.Fence) is checked inside the writer's transaction (see checkFence);
// a lost lease fails it alone with store.ErrLeaseLost (wrapped). A batch
// that would change a settled outcome or an ended run, or write an outcome
// of a final run, fails alone with store.ErrImmutable (wrapped; triggers
// of schema migration 6 and checkBatch enforce it: see
// store.Batch).
func (d *DB) Commit(ctx context.Context, b store.Batch) error {
	if err := b.CheckTexts(); err != nil {
		return fmt.Errorf("sqlite store: commit: %w", err)
	}
	if len(b.Creates) == 0 && len(b.Outcomes) == 0 && len(b.Runs) == 0 && len(b.Settlements) == 0 && len(b.Tasks) == 0 && len(b.Attempts) == 0 && len(b.ParentEnded) == 0 && len(b.Attrs) == 0 && b.Fence == nil {
		d.mu.RLock()
		closed := d.closed
		d.mu.RUnlock()
		if closed {
			return fmt.Errorf("sqlite store: commit: %w", ErrClosed)
		}
		return nil
	}
	err := d.write(&request{ctx: ctx, batch: &b})
	if err != nil {
		return fmt.Errorf("sqlite store: commit: %w", err)
	}
	return nil
}

// applyBatch writes the created runs, outcomes, run updates, settlements,
// tasks and attempts of one batch (or of several merged) inside the
// writer's transaction.
func applyBatch(w *wtx, creates []store.Run, outs []store.RunOutcome, runs []store.Run, sets []store.Settlement, tasks []store.Task, attempts []store.RunAttempt) error {
	now := time.Now().UnixNano()
	if err := createRuns(w, creates, now); err != nil {
		return err
	}
	touched := w.touched[:0]
	for i := range outs {
		touched = append(touched, outs[i].RunID)
	}
	for i := range runs {
		touched = append(touched, runs[i].ID)
	}
	for i := range sets {
		touched = append(touched, sets[i].RunID)
	}
	slices.Sort(touched)
	touched = slices.Compact(touched)
	w.touched = touched
	defer func() { clear(w.args) }() // drop references to the callers' values
	for len(outs) > 0 {
		n := min(len(outs), outcomeChunk)
		chunk := outs[:n]
		w.args = w.args[:0]
		var st rawStmt
		if n == outcomeChunk && allPlain(chunk) {
			st = w.plainStmt()
			for i := range chunk {
				w.args = appendPlainArgs(w.args, &chunk[i], now)
			}
		} else {
			st = w.upsertStmt(n)
			for i := range chunk {
				w.args = appendOutcomeArgs(w.args, &chunk[i], now)
			}
		}
		if _, err := st.ExecContext(w.ctx, w.args...); err != nil {
			if err := immutable(err); errors.Is(err, store.ErrImmutable) {
				return err // names the run and the key
			}
			if n == 1 {
				return fmt.Errorf("upsert outcome %s/%s: %w", chunk[0].RunID, chunk[0].Outcome.Key, err)
			}
			return fmt.Errorf("upsert outcomes %s/%s ... %s/%s: %w",
				chunk[0].RunID, chunk[0].Outcome.Key, chunk[n-1].RunID, chunk[n-1].Outcome.Key, err)
		}
		outs = outs[n:]
	}
	if err := updateRuns(w, runs, now); err != nil {
		return err
	}
	for i := range sets {
		st := &sets[i]
		if err := insertSettlement(w, st, now); err != nil {
			return fmt.Errorf("settlement %s/%s: %w", st.RunID, st.Key, err)
		}
	}
	if err := queueTasks(w, tasks, now); err != nil {
		return err
	}
	if err := upsertAttempts(w, attempts); err != nil {
		return err
	}
	// What waits for each run the batch touched, after all its writes.
	for _, id := range touched {
		if err := updateWaiting(w, id); err != nil {
			return err
		}
	}
	return nil
}

// updateRuns writes a batch's run updates: an unknown run is
// store.ErrNotFound, a final one store.ErrImmutable.
func updateRuns(w *wtx, runs []store.Run, now int64) error {
	for i := range runs {
		r := &runs[i]
		res, err := w.stmt(sqlUpdateRun).ExecContext(w.ctx, r.ModuleHash, r.Result, r.Error, nanosOr(r.UpdatedAt, now), r.ID)
		if err == nil {
			_, err = w.stmt(sqlUpdateRunStatus).ExecContext(w.ctx, string(r.Status), r.WakeAt, r.ID)
		}
		if err := immutable(err); errors.Is(err, store.ErrImmutable) {
			return err // names the run
		} else if err != nil {
			return fmt.Errorf("update run %s: %w", r.ID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("update run %s: %w", r.ID, err)
		}
		if n == 0 {
			return fmt.Errorf("update run %s: %w", r.ID, store.ErrNotFound)
		}
	}
	return nil
}

const insertSettlementSQL = `INSERT INTO settlements (run_id, key, status, value, error, attempts, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, key) DO NOTHING`

// insertSettlement stores st unless its (run, key) has one already.
func insertSettlement(w *wtx, st *store.Settlement, now int64) error {
	_, err := w.stmt(sqlInsertSettlement).ExecContext(w.ctx,
		st.RunID, st.Key, string(st.Status), st.Value, st.Error, st.Attempts, nanosOr(st.CreatedAt, now))
	return err
}

// updateWaiting runs waitingSQL for run id.
func updateWaiting(w *wtx, id string) error {
	if _, err := w.stmt(sqlWaiting).ExecContext(w.ctx, id); err != nil {
		return fmt.Errorf("update run %s: waiting: %w", id, err)
	}
	return nil
}

// abandonSQL marks a child run abandoned unless it has ended.
const abandonSQL = `UPDATE runs SET abandoned = 1, updated_at = ?
WHERE id = ? AND status NOT IN (?, ?, ?, ?, ?)`

// applyParentEnded writes what a batch's ParentEnded asks of child runs.
func applyParentEnded(w *wtx, ends []store.ParentEnd) error {
	for _, e := range ends {
		q, args := abandonSQL, []any{time.Now().UnixNano(), e.RunID}
		if !e.Abandon {
			q, args = requestCancelSQL, []any{e.Reason, time.Now().UnixNano(), e.RunID}
		}
		args = append(args, string(store.RunCompleted), string(store.RunFailed), string(store.RunCanceled), string(store.RunContinued), string(store.RunReset))
		if _, err := w.tx.ExecContext(w.ctx, q, args...); err != nil {
			return fmt.Errorf("parent ended: child run %s: %w", e.RunID, err)
		}
		if err := updateWaiting(w, e.RunID); err != nil {
			return err
		}
	}
	return nil
}

// The statements of Settle and RequestCancel (prepared once: namedSQL).
const (
	outcomeStateSQL = `SELECT kind, status FROM outcomes WHERE run_id = ? AND key = ?`
	settleSQL       = `INSERT INTO settlements (run_id, key, status, value, error, created_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, key) DO NOTHING`
	requestCancelSQL = `UPDATE runs SET cancel = ?, updated_at = ?
WHERE id = ? AND cancel = '' AND status NOT IN (?, ?, ?, ?, ?)`
)

// Settle records the settlement of an external promise exactly once. See
// store.Store.
func (d *DB) Settle(ctx context.Context, st store.Settlement) error {
	if err := st.CheckTexts(); err != nil {
		return fmt.Errorf("sqlite store: settle: %w", err)
	}
	if st.Status != store.OutcomeOK && st.Status != store.OutcomeError {
		return fmt.Errorf("sqlite store: settle %s.%s: status %q is not ok or error", st.RunID, st.Key, st.Status)
	}
	created := nanos(st.CreatedAt, time.Now())
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var kind, status string
		err := w.stmt(sqlOutcomeState).QueryRowContext(w.ctx, st.RunID, st.Key).Scan(&kind, &status)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && kind != "promise") {
			return fmt.Errorf("run %q has no promise at key %q: %w", st.RunID, st.Key, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if status != string(store.OutcomePending) {
			return fmt.Errorf("promise %s.%s is settled already: %w", st.RunID, st.Key, store.ErrConflict)
		}
		res, err := w.stmt(sqlSettle).ExecContext(w.ctx, st.RunID, st.Key, string(st.Status), st.Value, st.Error, created)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("promise %s.%s is settled already: %w", st.RunID, st.Key, store.ErrConflict)
		}
		return updateWaiting(w, st.RunID)
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: settle %s.%s: %w", st.RunID, st.Key, err)
	}
	return nil
}

// RequestCancel records a cancellation request. See store.Store.
func (d *DB) RequestCancel(ctx context.Context, runID, reason string) (store.Run, error) {
	if err := store.CheckText("cancel reason", reason); err != nil {
		return store.Run{}, fmt.Errorf("sqlite store: cancel: %w", err)
	}
	var r store.Run
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		if _, err := w.stmt(sqlRequestCancel).ExecContext(w.ctx, reason, time.Now().UnixNano(), runID,
			string(store.RunCompleted), string(store.RunFailed), string(store.RunCanceled), string(store.RunContinued), string(store.RunReset)); err != nil {
			return err
		}
		if err := updateWaiting(w, runID); err != nil {
			return err
		}
		var err error
		r, err = scanRun(w.stmt(sqlRunRow).QueryRowContext(w.ctx, runID))
		return err
	}})
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite store: cancel %s: %w", runID, err)
	}
	return r, nil
}

// appendOutcomeArgs appends the outcomeParams parameters of one outcome
// row; a zero UpdatedAt becomes now.
func appendOutcomeArgs(args []any, ro *store.RunOutcome, now int64) []any {
	o := &ro.Outcome
	waited, orphaned := int64(0), int64(0)
	if o.Waited {
		waited = 1
	}
	if o.Orphaned {
		orphaned = 1
	}
	return append(args,
		ro.RunID, o.Key, o.Kind, o.Function, string(o.Status), o.Value, o.Error,
		int64(o.Attempts), o.Seq, waited, o.Idle, int64(o.WakeOrder), o.VTime, o.Deadline, orphaned, nanosOr(o.UpdatedAt, now), o.StartedAt, o.SettledAt, rowscan.NullBytes(o.Schema))
}

// allPlain reports whether every outcome is plain: no error, not waited
// for, no idle point, wake order, deadline, orphan mark or schema, as a
// step settled inline is. upsertPlainSQL leaves those columns to their
// defaults, which are those values.
func allPlain(outs []store.RunOutcome) bool {
	for i := range outs {
		o := &outs[i].Outcome
		if o.Error != "" || o.Waited || o.Idle != 0 || o.WakeOrder != 0 || o.Deadline != 0 || o.Orphaned || o.Schema != nil {
			return false
		}
	}
	return true
}

// appendPlainArgs appends the parameters of a plain row of upsertPlainSQL.
func appendPlainArgs(args []any, ro *store.RunOutcome, now int64) []any {
	o := &ro.Outcome
	return append(args, ro.RunID, o.Key, o.Kind, o.Function, string(o.Status), o.Value,
		int64(o.Attempts), o.Seq, o.VTime, nanosOr(o.UpdatedAt, now), o.StartedAt, o.SettledAt)
}

// nanosOr returns t as unix ns, or now when t is zero.
func nanosOr(t time.Time, now int64) int64 {
	if t.IsZero() {
		return now
	}
	return t.UnixNano()
}

// nanos returns t as unix ns, or now when t is zero.
func nanos(t, now time.Time) int64 {
	if t.IsZero() {
		return now.UnixNano()
	}
	return t.UnixNano()
}

// runColumns are the columns scanRun reads, in order.
const runColumns = rowscan.RunColumns

// scanRun reads a row of runColumns.
func scanRun(s rowscan.Scanner) (store.Run, error) { return rowscan.Run(s, sql.ErrNoRows) }
