package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store/internal/rowscan"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
)

// defaultRunsLimit is the page size of Runs when the filter sets none.
const defaultRunsLimit = 100

// Module returns the module whose hash is hashOrName or, failing that, the
// module the name hashOrName points at. It fails with
// store.ErrNotFound (wrapped) if neither exists.
func (d *DB) Module(ctx context.Context, hashOrName string) (store.Module, error) {
	m, err := d.module(ctx, hashOrName, true)
	if err != nil {
		return store.Module{}, fmt.Errorf("postgres store: module %q: %w", hashOrName, d.wrapClosed(err))
	}
	return m, nil
}

// ModuleInfo returns a module by hash or name, without its bytes.
func (d *DB) ModuleInfo(ctx context.Context, hashOrName string) (store.Module, error) {
	m, err := d.module(ctx, hashOrName, false)
	if err != nil {
		return store.Module{}, fmt.Errorf("postgres store: module %q: %w", hashOrName, d.wrapClosed(err))
	}
	return m, nil
}

func (d *DB) module(ctx context.Context, hashOrName string, withBytes bool) (store.Module, error) {
	if err := d.check(ctx); err != nil {
		return store.Module{}, err
	}
	if unstorable(hashOrName) {
		return store.Module{}, store.ErrNotFound
	}
	cols := `SELECT ` + rowscan.ModuleColumns(withBytes) + ` FROM modules `
	m, err := scanModule(d.pool.QueryRow(ctx, cols+`WHERE hash = $1`, hashOrName), withBytes)
	if errors.Is(err, store.ErrNotFound) && hashOrName != "" {
		m, err = scanModule(d.pool.QueryRow(ctx, cols+`WHERE hash = (SELECT hash FROM module_names WHERE name = $1 ORDER BY seq DESC LIMIT 1)`, hashOrName), withBytes)
	}
	return m, err
}

// Modules lists every module without its bytes, most recently created
// first (ties: most recently inserted first).
func (d *DB) Modules(ctx context.Context) ([]store.Module, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: list modules: %w", err)
	}
	rows, err := d.pool.Query(ctx,
		`SELECT `+rowscan.ModuleColumns(false)+` FROM modules ORDER BY created_at DESC, ins_seq DESC`)
	if err != nil {
		return nil, fmt.Errorf("postgres store: list modules: %w", d.wrapClosed(err))
	}
	defer rows.Close()
	var ms []store.Module
	for rows.Next() {
		m, err := scanModule(rows, false)
		if err != nil {
			return nil, fmt.Errorf("postgres store: list modules: %w", err)
		}
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: list modules: %w", d.wrapClosed(err))
	}
	return ms, nil
}

// scanModule reads a row of rowscan.ModuleColumns(withBytes).
func scanModule(s rowscan.Scanner, withBytes bool) (store.Module, error) {
	return rowscan.Module(s, withBytes, pgx.ErrNoRows)
}

// Run returns the run with the given id, or store.ErrNotFound (wrapped).
func (d *DB) Run(ctx context.Context, id string) (store.Run, error) {
	if err := d.check(ctx); err != nil {
		return store.Run{}, fmt.Errorf("postgres store: run %s: %w", id, err)
	}
	if unstorable(id) {
		return store.Run{}, fmt.Errorf("postgres store: run %s: %w", store.CleanText(id), store.ErrNotFound)
	}
	r, err := scanRun(d.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if err != nil {
		return store.Run{}, fmt.Errorf("postgres store: run %s: %w", id, d.wrapClosed(err))
	}
	return r, nil
}

// Runs lists runs filtered and ordered by f (rowscan.RunsQuery), ids in
// byte order. By ID it uses the (status, id) index or the primary key,
// so a page costs O(limit); the other orders and filters read every run
// they select.
func (d *DB) Runs(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = defaultRunsLimit
	}
	if store.CheckText("workflow", f.Workflow) != nil || store.CheckText("module", f.Module) != nil {
		return nil, nil // no stored run has such a text (and Postgres would refuse it)
	}
	var ok bool
	if f.RunSelect, ok = f.RunSelect.Storable(); !ok {
		return nil, nil
	}
	// A cursor no id can equal sorts where its valid prefix ends.
	var decls []store.AttrDecl
	if len(f.Attrs) > 0 {
		var err error
		if decls, err = d.Attrs(ctx); err != nil {
			return nil, fmt.Errorf("postgres store: list runs: %w", err)
		}
		if err := store.CheckAttrConds(decls, f.Attrs); err != nil {
			return nil, fmt.Errorf("postgres store: list runs: %w", err)
		}
	}
	q, args := rowscan.RunsQuery(f, limit, "$", store.CleanText(f.After), decls)
	rs, err := d.queryRuns(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres store: list runs: %w", err)
	}
	return rs, nil
}

// DueRuns returns the runs a worker should drive (see store.Store),
// ordered by WakeAt then ID, at most limit of them (limit <= 0: no limit).
func (d *DB) DueRuns(ctx context.Context, now int64, limit int) ([]store.Run, error) {
	var lim any // NULL: no limit
	if limit > 0 {
		lim = int64(limit)
	}
	rs, err := d.queryRuns(ctx, `SELECT `+runColumns+` FROM runs WHERE id IN (`+dueIDs("", "$5")+`)
ORDER BY wake_at, id LIMIT $5`, dueArgs(now, lim)...)
	if err != nil {
		return nil, fmt.Errorf("postgres store: due runs: %w", err)
	}
	return rs, nil
}

// dueIDs selects the ids of due runs that also meet cond (" AND ..."),
// the first lim (an SQL expression; NULL: all) of each kind in DueRuns
// order: enough for the first lim overall. Its parameters are dueArgs:
// $1 and $2 the pending and running statuses, $3 the suspended one, $4
// now, $5 the limit. Each kind of due run is an index range scan, so the
// cost follows the number of due runs, not of suspended ones; a
// suspended run that a settlement or its cancellation waits for has
// waiting set (see waitingSQL). A paused run is never due.
func dueIDs(cond, lim string) string {
	cond = " AND paused_at = 0" + cond
	return `(SELECT id FROM runs WHERE status IN ($1, $2)` + cond + ` ORDER BY wake_at, id LIMIT ` + lim + `)
UNION ALL (SELECT id FROM runs WHERE status = $3 AND wake_at > 0 AND wake_at <= $4` + cond + ` ORDER BY wake_at, id LIMIT ` + lim + `)
UNION ALL (SELECT id FROM runs WHERE status = $3 AND deadline > 0 AND deadline <= $4 AND cancel = ''` + cond + ` ORDER BY wake_at, id LIMIT ` + lim + `)
UNION ALL (SELECT id FROM runs WHERE waiting AND status = $3` + cond + ` ORDER BY wake_at, id LIMIT ` + lim + `)`
}

// dueArgs returns the parameters of dueIDs; lim is an int64 or nil (no
// limit).
func dueArgs(now int64, lim any) []any {
	return []any{string(store.RunPending), string(store.RunRunning), string(store.RunSuspended), now, lim}
}

// waitingSQL sets runs.waiting of run $1 to whether it is suspended and a
// settlement or its cancellation waits to be delivered to it. Every write
// that can change that runs it, in its transaction: Settle,
// RequestCancel, and a batch, for each run it touches. (A run that is
// neither suspended nor waiting is left alone: no write.)
const waitingSQL = `UPDATE runs SET waiting = ` + waitingExpr + `
WHERE id = $1 AND (status = '` + string(store.RunSuspended) + `' OR waiting)`

// lockRunSQL locks run $1's row. A transaction that writes a settlement
// for a run other than its own execution's (Settle, or a child's end
// settling its parent) runs it before waitingSQL: under READ COMMITTED
// the two transactions could otherwise each miss the other, the
// settlement's seeing the run still running (or its pending outcome not
// yet recorded), the run's suspension not yet seeing the settlement.
// With the lock, whichever comes second waits for the first to commit,
// and its next statement (a new snapshot) sees what the first wrote.
const lockRunSQL = `SELECT 1 FROM runs WHERE id = $1 FOR NO KEY UPDATE`

// waitingExpr is whether a suspended run has a settlement or its
// cancellation waiting to be delivered.
const waitingExpr = `CASE WHEN status = '` + string(store.RunSuspended) + `' THEN (
	EXISTS (SELECT 1 FROM settlements s JOIN outcomes o ON o.run_id = s.run_id AND o.key = s.key
		WHERE s.run_id = runs.id AND o.status = '` + string(store.OutcomePending) + `')
	OR (cancel <> '' AND NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.run_id = runs.id AND o.key = '` + store.CancelKey + `'))) ELSE false END`

// Settlements returns the run's settlements not yet delivered. See
// store.Store.
func (d *DB) Settlements(ctx context.Context, runID string) ([]store.Settlement, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: settlements of %s: %w", runID, err)
	}
	if unstorable(runID) {
		return nil, nil
	}
	rows, err := d.pool.Query(ctx, `SELECT s.key, s.status, s.value, s.error, s.attempts, s.created_at
FROM settlements s JOIN outcomes o ON o.run_id = s.run_id AND o.key = s.key
WHERE s.run_id = $1 AND o.status = $2 ORDER BY s.created_at, s.key`, runID, string(store.OutcomePending))
	if err != nil {
		return nil, fmt.Errorf("postgres store: settlements of %s: %w", runID, d.wrapClosed(err))
	}
	defer rows.Close()
	var out []store.Settlement
	for rows.Next() {
		s := store.Settlement{RunID: runID}
		var status string
		var created int64
		if err := rows.Scan(&s.Key, &status, &s.Value, &s.Error, &s.Attempts, &created); err != nil {
			return nil, fmt.Errorf("postgres store: settlements of %s: %w", runID, err)
		}
		s.Status = store.OutcomeStatus(status)
		s.CreatedAt = time.Unix(0, created)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: settlements of %s: %w", runID, d.wrapClosed(err))
	}
	return out, nil
}

func (d *DB) queryRuns(ctx context.Context, q string, args ...any) ([]store.Run, error) {
	if err := d.check(ctx); err != nil {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, d.wrapClosed(err)
	}
	defer rows.Close()
	var rs []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, d.wrapClosed(rows.Err())
}

// Outcomes returns every outcome of the run: settled ones (Seq > 0) by Seq,
// then pending ones by Key. An unknown run has no outcomes (no error).
func (d *DB) Outcomes(ctx context.Context, runID string) ([]store.Outcome, error) {
	return d.outcomes(ctx, "outcomes of "+runID, `run_id = $1 ORDER BY seq = 0, seq, key`, runID)
}

// Outcome returns one outcome of a run. See store.Store.
func (d *DB) Outcome(ctx context.Context, runID, key string) (store.Outcome, error) {
	os, err := d.outcomes(ctx, "outcome "+runID+"."+key, `run_id = $1 AND key = $2`, runID, key)
	return store.One(os, err, "postgres store: outcome "+runID+"."+key)
}

func (d *DB) outcomes(ctx context.Context, what, where string, args ...any) ([]store.Outcome, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: %s: %w", what, err)
	}
	if unstorableArgs(args) {
		return nil, nil
	}
	rows, err := d.pool.Query(ctx, `
SELECT key, kind, function, status, value, error, attempts, seq, waited, idle, wake_order, vtime, deadline, orphaned, updated_at, started_at, settled_at, schema
FROM outcomes WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %s: %w", what, d.wrapClosed(err))
	}
	defer rows.Close()
	var out []store.Outcome
	for rows.Next() {
		var o store.Outcome
		var status string
		var updated int64
		if err := rows.Scan(&o.Key, &o.Kind, &o.Function, &status, &o.Value, &o.Error, &o.Attempts,
			&o.Seq, &o.Waited, &o.Idle, &o.WakeOrder, &o.VTime, &o.Deadline, &o.Orphaned, &updated, &o.StartedAt, &o.SettledAt, &o.Schema); err != nil {
			return nil, fmt.Errorf("postgres store: %s: %w", what, err)
		}
		o.Status = store.OutcomeStatus(status)
		o.UpdatedAt = time.Unix(0, updated)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: %s: %w", what, d.wrapClosed(err))
	}
	return out, nil
}
