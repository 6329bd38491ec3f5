package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/store/internal/rowscan"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
)

// PutModule stores m. Storing a hash again keeps the first record; a
// non-empty m.Name is pointed at m.Hash (moved from the module it named)
// and every other name is left as it is. A zero m.CreatedAt is set to
// now.
func (d *DB) PutModule(ctx context.Context, m store.Module) error {
	if err := m.CheckTexts(); err != nil {
		return fmt.Errorf("postgres store: put module: %w", err)
	}
	if m.Hash == "" {
		return errors.New("postgres store: put module: empty hash")
	}
	if err := d.check(ctx); err != nil {
		return fmt.Errorf("postgres store: put module %s: %w", m.Hash, err)
	}
	wf := m.Workflows
	if wf == nil {
		wf = []string{}
	}
	workflows, err := json.Marshal(wf)
	if err != nil {
		return fmt.Errorf("postgres store: put module %s: encode workflows: %w", m.Hash, err)
	}
	schemas, err := rowscan.InputSchemas(m.InputSchemas)
	if err != nil {
		return fmt.Errorf("postgres store: put module %s: encode input schemas: %w", m.Hash, err)
	}
	bytes := m.Bytes
	if bytes == nil {
		bytes = []byte{}
	}
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
INSERT INTO modules (hash, bytes, abi_version, workflows, created_at, input_schemas)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (hash) DO NOTHING`,
			m.Hash, bytes, m.ABIVersion, string(workflows), nanos(m.CreatedAt, time.Now()), schemas); err != nil {
			return err
		}
		if m.Name == "" {
			return nil
		}
		_, err := tx.Exec(ctx, `
INSERT INTO module_names (name, hash, seq) VALUES ($1, $2, nextval('modules_named_seq'))
ON CONFLICT (name, hash) DO UPDATE SET seq = excluded.seq`, m.Name, m.Hash)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: put module %s: %w", m.Hash, d.wrapClosed(err))
	}
	return nil
}

// CreateRun inserts r unless a run with r.ID exists, and returns the run as
// stored and whether this call created it. An empty r.Status is stored as
// pending; zero CreatedAt and UpdatedAt are set to now.
func (d *DB) CreateRun(ctx context.Context, r store.Run) (store.Run, bool, error) {
	if err := r.CheckTexts(); err != nil {
		return store.Run{}, false, fmt.Errorf("postgres store: create run: %w", err)
	}
	c, created, err := d.createRun(ctx, r, "", 0, 0)
	return c.Run, created, err
}

// CreateClaimedRun creates a run claimed by owner. See store.Store.
func (d *DB) CreateClaimedRun(ctx context.Context, r store.Run, owner string, now int64, ttl time.Duration) (store.ClaimedRun, bool, error) {
	if err := r.CheckTexts(); err != nil {
		return store.ClaimedRun{}, false, fmt.Errorf("postgres store: create run: %w", err)
	}
	if err := store.CheckClaim(owner, ttl); err != nil {
		return store.ClaimedRun{}, false, fmt.Errorf("postgres store: create run %s: %w", r.ID, err)
	}
	return d.createRun(ctx, r, owner, now, ttl)
}

// createRun inserts r unless it exists and, if owner is set and r is
// new, claims it for owner, in one transaction.
func (d *DB) createRun(ctx context.Context, r store.Run, owner string, now int64, ttl time.Duration) (store.ClaimedRun, bool, error) {
	if r.ID == "" {
		return store.ClaimedRun{}, false, errors.New("postgres store: create run: empty id")
	}
	r = r.ForCreate(time.Now())

	var out store.ClaimedRun
	var created bool
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, insertRunSQL, insertRunArgs(&r)...)
		if err != nil {
			return err
		}
		if created = tag.RowsAffected() == 1; !created {
			out.Run, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, r.ID))
			return err
		}
		for name, v := range r.Attrs {
			if _, err := tx.Exec(ctx, upsertAttrSQL, rowscan.AttrArgs(r.ID, name, v)...); err != nil {
				return fmt.Errorf("attribute %q: %w", name, err)
			}
		}
		r.Attrs = nil // reads leave it nil (store.Run.Attrs)
		out.Run = r
		if r.Status == store.RunSuspended && r.Cancel != "" {
			// Created with a cancellation waiting to be delivered.
			if _, err := tx.Exec(ctx, waitingSQL, r.ID); err != nil {
				return err
			}
		}
		if owner != "" {
			expiry := now + int64(ttl)
			run, err := scanRun(tx.QueryRow(ctx, claimOneSQL, r.ID, owner, now, expiry))
			if err != nil {
				return err
			}
			out = store.ClaimedRun{Run: run, Lease: store.Lease{RunID: r.ID, Owner: owner, Token: run.LeaseToken, Expiry: expiry}}
		}
		return nil
	})
	if err != nil {
		return store.ClaimedRun{}, false, fmt.Errorf("postgres store: create run %s: %w", r.ID, err)
	}
	return out, created, nil
}

// insertRunSQL inserts a run unless one exists with its id.
const insertRunSQL = `
INSERT INTO runs (id, module_hash, workflow, input, status, result, error, seed, parent, start_time, wake_at, deadline, cancel, created_at, updated_at, parent_close, abandoned, traceparent, reset_from, reset_key)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
ON CONFLICT (id) DO NOTHING`

// insertRunArgs are insertRunSQL's parameters for r (as ForCreate left it).
func insertRunArgs(r *store.Run) []any {
	return []any{r.ID, r.ModuleHash, r.Workflow, r.Input, string(r.Status), r.Result, r.Error,
		int64(r.Seed), r.Parent, r.StartTime, r.WakeAt, r.Deadline, r.Cancel, r.CreatedAt.UnixNano(), r.UpdatedAt.UnixNano(),
		string(r.ParentClose), rowscan.Int(r.Abandoned), r.TraceParent, r.ResetFrom, r.ResetKey}
}

// upsertOutcomeSQL upserts one outcome row. A key appearing twice in a
// batch is written twice, in order, so the last row wins; but a pending
// row never replaces a settled one (an activity's attempt counter written
// late must not undo its outcome), attempts never go down, and a non-zero
// started_at or settled_at stays.
const upsertOutcomeSQL = `
INSERT INTO outcomes (run_id, key, kind, function, status, value, error, attempts, seq, waited, idle, wake_order, vtime, deadline, orphaned, updated_at, started_at, settled_at, schema)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
ON CONFLICT (run_id, key) DO UPDATE SET
	kind = excluded.kind,
	function = excluded.function,
	status = excluded.status,
	value = excluded.value,
	error = excluded.error,
	attempts = GREATEST(outcomes.attempts, excluded.attempts),
	seq = excluded.seq,
	waited = excluded.waited,
	idle = excluded.idle,
	wake_order = excluded.wake_order,
	vtime = excluded.vtime,
	deadline = excluded.deadline,
	orphaned = excluded.orphaned,
	updated_at = excluded.updated_at,
	started_at = CASE WHEN outcomes.started_at <> 0 THEN outcomes.started_at ELSE excluded.started_at END,
	settled_at = CASE WHEN outcomes.settled_at <> 0 THEN outcomes.settled_at ELSE excluded.settled_at END,
	schema = COALESCE(excluded.schema, outcomes.schema)
WHERE excluded.status <> 'pending' OR outcomes.status = 'pending'`

// updateRunSQL writes every mutable field of a run.
const updateRunSQL = `UPDATE runs SET module_hash = $1, status = $2, result = $3, error = $4, wake_at = $5, updated_at = $6 WHERE id = $7`

// insertSettlementSQL records a settlement unless one exists for its key.
const insertSettlementSQL = `INSERT INTO settlements (run_id, key, status, value, error, attempts, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id, key) DO NOTHING`

// Commit applies b in one transaction and returns once it is committed.
// The batch's statements are pipelined (one round trip). An outcome,
// settlement or task of an unknown run fails the batch (foreign key), as
// does an update of an unknown run (wrapping store.ErrNotFound); a failed batch
// leaves no trace. A zero UpdatedAt (on an outcome or a run) or CreatedAt
// (on a settlement) is stored as now. A ctx that has ended fails the
// commit with its error before anything is written. A fenced batch's
// pipeline starts with a statement that locks its run's row and checks
// the lease (see lockLeaseSQL); a lost lease rolls the batch back. An
// unfenced one with outcomes starts with journalRunsSQL. Either refuses
// outcomes of a final run (store.JournalClosedError).
func (d *DB) Commit(ctx context.Context, b store.Batch) error {
	if err := b.CheckTexts(); err != nil {
		return fmt.Errorf("postgres store: commit: %w", err)
	}
	if len(b.Creates) == 0 && len(b.Outcomes) == 0 && len(b.Runs) == 0 && len(b.Settlements) == 0 && len(b.Tasks) == 0 && len(b.Attempts) == 0 && len(b.ParentEnded) == 0 && len(b.Attrs) == 0 && b.Fence == nil {
		if d.closed.Load() {
			return fmt.Errorf("postgres store: commit: %w", ErrClosed)
		}
		return nil
	}
	if err := b.CheckFenceWrites(); err != nil {
		return fmt.Errorf("postgres store: commit: %w", err)
	}
	for i := range b.Creates {
		if b.Creates[i].ID == "" {
			return errors.New("postgres store: commit: create run: empty id")
		}
	}
	err := d.inTx(ctx, func(tx pgx.Tx) error { return commitTx(ctx, tx, &b) })
	if err != nil {
		return fmt.Errorf("postgres store: commit: %w", err)
	}
	return nil
}

// commitTx applies b (checked by Commit) inside tx.
func commitTx(ctx context.Context, tx pgx.Tx, bp *store.Batch) error {
	b := *bp
	now := time.Now().UnixNano()
	var pb pgx.Batch
	if f := b.Fence; f != nil {
		pb.Queue(lockLeaseSQL, f.RunID, f.Owner, f.Token)
	} else if len(b.Outcomes) > 0 {
		pb.Queue(journalRunsSQL, outcomeRuns(&b))
	}
	for i := range b.Creates {
		r := b.Creates[i].ForCreate(time.Unix(0, now))
		pb.Queue(insertRunSQL, insertRunArgs(&r)...)
	}
	for i := range b.Outcomes {
		ro := &b.Outcomes[i]
		o := &ro.Outcome
		pb.Queue(upsertOutcomeSQL, ro.RunID, o.Key, o.Kind, o.Function, string(o.Status), o.Value, o.Error,
			int64(o.Attempts), o.Seq, o.Waited, o.Idle, int64(o.WakeOrder), o.VTime, o.Deadline, o.Orphaned,
			nanosOr(o.UpdatedAt, now), o.StartedAt, o.SettledAt, rowscan.NullBytes(o.Schema))
	}
	for i := range b.Runs {
		r := &b.Runs[i]
		pb.Queue(updateRunSQL, r.ModuleHash, string(r.Status), r.Result, r.Error, r.WakeAt, nanosOr(r.UpdatedAt, now), r.ID)
	}
	for i := range b.Settlements {
		st := &b.Settlements[i]
		pb.Queue(insertSettlementSQL, st.RunID, st.Key, string(st.Status), st.Value, st.Error, int64(st.Attempts), nanosOr(st.CreatedAt, now))
	}
	queueTasks(&pb, b.Tasks, now)
	queueAttempts(&pb, b.Attempts)
	queueParentEnded(&pb, b.ParentEnded, now)
	nAttrs := queueBatchAttrs(&pb, &b)
	if b.Release {
		f := b.Fence
		pb.Queue(releaseLeaseSQL, f.RunID, f.Owner, f.Token, time.Now().UnixNano())
	}
	touched := touchedRuns(&b)
	for _, t := range touched {
		if t.settled {
			pb.Queue(lockRunSQL, t.id)
		}
		pb.Queue(waitingSQL, t.id)
	}
	br := tx.SendBatch(ctx, &pb)
	var err error
	if f := b.Fence; f != nil {
		var st store.RunStatus
		if st, err = readFence(br, *f); err == nil && st.Final() && len(b.Outcomes) > 0 {
			err = store.JournalClosedError(f.RunID, st)
		}
	} else if len(b.Outcomes) > 0 {
		err = readJournalRuns(br)
	}
	if err == nil {
		err = readBatch(br, &b, nAttrs, touched)
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// readBatch reads the results of the statements Commit queued for b.
func readBatch(br pgx.BatchResults, b *store.Batch, nAttrs int, touched []touchedRun) error {
	for i := range b.Creates {
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("create run %s: %w", b.Creates[i].ID, err)
		}
		if tag.RowsAffected() == 0 {
			return store.CreateConflictError(b.Creates[i].ID)
		}
	}
	for i := range b.Outcomes {
		if _, err := br.Exec(); err != nil {
			ro := &b.Outcomes[i]
			return fmt.Errorf("upsert outcome %s/%s: %w", ro.RunID, ro.Outcome.Key, err)
		}
	}
	for i := range b.Runs {
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("update run %s: %w", b.Runs[i].ID, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("update run %s: %w", b.Runs[i].ID, store.ErrNotFound)
		}
	}
	for i := range b.Settlements {
		if _, err := br.Exec(); err != nil {
			st := &b.Settlements[i]
			return fmt.Errorf("settlement %s/%s: %w", st.RunID, st.Key, err)
		}
	}
	for i := range b.Tasks {
		if _, err := br.Exec(); err != nil {
			t := &b.Tasks[i]
			return fmt.Errorf("queue task %s.%s: %w", t.RunID, t.Key, err)
		}
	}
	if err := readAttempts(br, b.Attempts); err != nil {
		return err
	}
	for i := range b.ParentEnded {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("parent ended: child run %s: %w", b.ParentEnded[i].RunID, err)
		}
	}
	if err := readAttrs(br, nAttrs); err != nil {
		return err
	}
	if b.Release {
		// The fence's lock holds the run's row: the release finds the lease.
		tag, err := br.Exec()
		if err == nil && tag.RowsAffected() == 0 {
			err = b.Fence.LostError()
		}
		if err != nil {
			return fmt.Errorf("release lease of run %s: %w", b.Fence.RunID, err)
		}
	}
	for _, t := range touched {
		if t.settled {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("lock run %s: %w", t.id, err)
			}
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("update run %s: waiting: %w", t.id, err)
		}
	}
	return nil
}

// touchedRun is a run a batch writes to, and whether it writes a
// settlement for it.
type touchedRun struct {
	id      string
	settled bool
}

// touchedRuns returns the runs b writes outcomes, updates or settlements
// of, by id, once each: after the batch, what waits for each of them is
// computed again (waitingSQL; after lockRunSQL for a run given a
// settlement).
func touchedRuns(b *store.Batch) []touchedRun {
	ts := make([]touchedRun, 0, len(b.Runs)+len(b.Settlements)+1)
	for i := range b.Outcomes {
		ts = append(ts, touchedRun{id: b.Outcomes[i].RunID})
	}
	for i := range b.Runs {
		ts = append(ts, touchedRun{id: b.Runs[i].ID})
	}
	for i := range b.Settlements {
		ts = append(ts, touchedRun{id: b.Settlements[i].RunID, settled: true})
	}
	for i := range b.ParentEnded {
		ts = append(ts, touchedRun{id: b.ParentEnded[i].RunID})
	}
	// By id, a settled entry first, then one entry per id.
	slices.SortFunc(ts, func(a, b touchedRun) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return cmpBool(b.settled, a.settled)
	})
	return slices.CompactFunc(ts, func(a, b touchedRun) bool { return a.id == b.id })
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// The statements of a batch's ParentEnded: a cancellation request (as
// RequestCancel) or the abandoned mark, for a child run not ended.
const (
	requestCancelSQL = `UPDATE runs SET cancel = $1, updated_at = $2
WHERE id = $3 AND cancel = '' AND status NOT IN ($4, $5, $6, $7, $8)`
	abandonSQL = `UPDATE runs SET abandoned = 1, updated_at = $1
WHERE id = $2 AND status NOT IN ($3, $4, $5, $6, $7)`
)

// queueParentEnded queues what a batch's ParentEnded asks of child runs.
func queueParentEnded(pb *pgx.Batch, ends []store.ParentEnd, now int64) {
	for _, e := range ends {
		ended := []any{string(store.RunCompleted), string(store.RunFailed), string(store.RunCanceled), string(store.RunContinued), string(store.RunReset)}
		if e.Abandon {
			pb.Queue(abandonSQL, append([]any{now, e.RunID}, ended...)...)
		} else {
			pb.Queue(requestCancelSQL, append([]any{e.Reason, now, e.RunID}, ended...)...)
		}
	}
}

// Settle records the settlement of an external promise exactly once. See
// store.Store.
func (d *DB) Settle(ctx context.Context, st store.Settlement) error {
	if err := st.CheckTexts(); err != nil {
		return fmt.Errorf("postgres store: settle: %w", err)
	}
	if st.Status != store.OutcomeOK && st.Status != store.OutcomeError {
		return fmt.Errorf("postgres store: settle %s.%s: status %q is not ok or error", st.RunID, st.Key, st.Status)
	}
	created := nanos(st.CreatedAt, time.Now())
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var kind, status string
		err := tx.QueryRow(ctx, `SELECT kind, status FROM outcomes WHERE run_id = $1 AND key = $2 FOR SHARE`, st.RunID, st.Key).Scan(&kind, &status)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && kind != "promise") {
			return fmt.Errorf("run %q has no promise at key %q: %w", st.RunID, st.Key, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if status != string(store.OutcomePending) {
			return fmt.Errorf("promise %s.%s is settled already: %w", st.RunID, st.Key, store.ErrConflict)
		}
		tag, err := tx.Exec(ctx, insertSettlementSQL, st.RunID, st.Key, string(st.Status), st.Value, st.Error, int64(st.Attempts), created)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("promise %s.%s is settled already: %w", st.RunID, st.Key, store.ErrConflict)
		}
		if _, err := tx.Exec(ctx, lockRunSQL, st.RunID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, waitingSQL, st.RunID)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: settle %s.%s: %w", st.RunID, st.Key, err)
	}
	return nil
}

// RequestCancel records a cancellation request. See store.Store.
func (d *DB) RequestCancel(ctx context.Context, runID, reason string) (store.Run, error) {
	if err := store.CheckText("cancel reason", reason); err != nil {
		return store.Run{}, fmt.Errorf("postgres store: cancel: %w", err)
	}
	if unstorable(runID) {
		return store.Run{}, fmt.Errorf("postgres store: cancel %s: %w", store.CleanText(runID), store.ErrNotFound)
	}
	var r store.Run
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, requestCancelSQL, reason, time.Now().UnixNano(), runID,
			string(store.RunCompleted), string(store.RunFailed), string(store.RunCanceled), string(store.RunContinued), string(store.RunReset)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, waitingSQL, runID); err != nil {
			return err
		}
		var err error
		r, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, runID))
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("postgres store: cancel %s: %w", runID, err)
	}
	return r, nil
}

// nanos returns t as unix ns, or now when t is zero.
func nanos(t, now time.Time) int64 {
	if t.IsZero() {
		return now.UnixNano()
	}
	return t.UnixNano()
}

// nanosOr returns t as unix ns, or now (unix ns) when t is zero.
func nanosOr(t time.Time, now int64) int64 {
	if t.IsZero() {
		return now
	}
	return t.UnixNano()
}

// runColumns are the columns scanRun reads, in order.
const runColumns = rowscan.RunColumns

// scanRun reads a row of runColumns.
func scanRun(s rowscan.Scanner) (store.Run, error) { return rowscan.Run(s, pgx.ErrNoRows) }
