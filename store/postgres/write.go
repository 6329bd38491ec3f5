package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
		if _, err := tx.Exec(ctx, `INSERT INTO module_owners (namespace, hash) VALUES ($1, $2) ON CONFLICT DO NOTHING`, m.Owner(), m.Hash); err != nil {
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

// insertSettlementSQL records a settlement unless one exists for its key.
const insertSettlementSQL = `INSERT INTO settlements (run_id, key, status, value, error, attempts, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id, key) DO NOTHING`

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
