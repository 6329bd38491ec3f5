package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store/internal/rowscan"

	"github.com/skeinrun/skein/store"
)

// defaultRunsLimit is the page size of Runs when the filter sets none.
const defaultRunsLimit = 100

// Module returns the module whose hash is hashOrName or, failing that, the
// module the name hashOrName points at. It fails with
// store.ErrNotFound (wrapped) if neither exists.
func (d *DB) Module(ctx context.Context, hashOrName string) (store.Module, error) {
	return d.module(ctx, hashOrName, true)
}

// ModuleInfo returns a module by hash or name, without its bytes.
func (d *DB) ModuleInfo(ctx context.Context, hashOrName string) (store.Module, error) {
	m, err := scanModule(d.rd[readModuleInfo].QueryRowContext(ctx, hashOrName), false)
	if err != nil {
		return store.Module{}, fmt.Errorf("sqlite store: module %q: %w", hashOrName, err)
	}
	return m, nil
}

// moduleInfoSQL finds a module by hash, else the module of that name, in
// one statement (prepared once: readSQL).
var moduleInfoSQL = `SELECT ` + moduleColumns(false) + `
WHERE m.hash = ?1 OR m.hash = (SELECT hash FROM module_names WHERE ?1 <> '' AND name = ?1 ORDER BY seq DESC LIMIT 1)
ORDER BY m.hash = ?1 DESC LIMIT 1`

func (d *DB) module(ctx context.Context, hashOrName string, withBytes bool) (store.Module, error) {
	cols := `SELECT ` + moduleColumns(withBytes)
	m, err := scanModule(d.rdb.QueryRowContext(ctx, cols+`WHERE m.hash = ?`, hashOrName), withBytes)
	if errors.Is(err, store.ErrNotFound) && hashOrName != "" {
		m, err = scanModule(d.rdb.QueryRowContext(ctx,
			cols+`WHERE m.hash = (SELECT hash FROM module_names WHERE name = ? ORDER BY seq DESC LIMIT 1)`, hashOrName), withBytes)
	}
	if err != nil {
		return store.Module{}, fmt.Errorf("sqlite store: module %q: %w", hashOrName, err)
	}
	return m, nil
}

// moduleColumns is the select list and FROM clause of a read of modules
// (as m) in rowscan.Module's order: the names it was stored under, the
// last first, each with whether it still points at it (module_names,
// migration 13), then the record. The bytes live in
// module_bytes and are joined only when asked for (migration 8 says why).
func moduleColumns(withBytes bool) string {
	const names = `m.hash, (SELECT json_group_array(json_array(n.name, n.seq = (SELECT MAX(o.seq) FROM module_names o WHERE o.name = n.name)) ORDER BY n.seq DESC)
	FROM module_names n WHERE n.hash = m.hash), (SELECT json_group_array(namespace) FROM (SELECT namespace FROM module_owners WHERE hash = m.hash ORDER BY namespace)), `
	if withBytes {
		return names + `m.size, b.bytes, m.abi_version, m.workflows, m.created_at, m.input_schemas FROM modules m JOIN module_bytes b ON b.hash = m.hash `
	}
	return names + `m.size, m.abi_version, m.workflows, m.created_at, m.input_schemas FROM modules m `
}

// Modules lists every module without its bytes, most recently created
// first.
func (d *DB) Modules(ctx context.Context) ([]store.Module, error) {
	rows, err := d.rdb.QueryContext(ctx,
		`SELECT `+moduleColumns(false)+`ORDER BY m.created_at DESC, m.rowid DESC`)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: list modules: %w", err)
	}
	defer rows.Close()
	var ms []store.Module
	for rows.Next() {
		m, err := scanModule(rows, false)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: list modules: %w", err)
		}
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: list modules: %w", err)
	}
	return ms, nil
}

// scanModule reads a row of moduleColumns(withBytes).
func scanModule(s rowscan.Scanner, withBytes bool) (store.Module, error) {
	return rowscan.Module(s, withBytes, sql.ErrNoRows)
}

// Run returns the run with the given id, or store.ErrNotFound (wrapped).
func (d *DB) Run(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(d.rd[readRun].QueryRowContext(ctx, id))
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite store: run %s: %w", id, err)
	}
	return r, nil
}

// Runs lists runs filtered and ordered by f (rowscan.RunsQuery). By ID
// it uses the primary key or the (status, id) index, so a page costs
// O(limit) whatever the table size; the other orders and filters read
// every run they select.
func (d *DB) Runs(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = defaultRunsLimit
	}
	var decls []store.AttrDecl
	if len(f.Attrs) > 0 {
		var err error
		if decls, err = d.Attrs(ctx); err != nil {
			return nil, fmt.Errorf("sqlite store: list runs: %w", err)
		}
		if err := store.CheckAttrConds(decls, f.Attrs); err != nil {
			return nil, fmt.Errorf("sqlite store: list runs: %w", err)
		}
	}
	q, args := rowscan.RunsQuery(f, limit, "?", f.After, decls)
	rows, err := d.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: list runs: %w", err)
	}
	rs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: list runs: %w", err)
	}
	return rs, nil
}

// DueRuns returns the runs a worker should drive (see store.Store),
// ordered by WakeAt then ID, at most limit of them (limit <= 0: no limit).
func (d *DB) DueRuns(ctx context.Context, now int64, limit int) ([]store.Run, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := d.rd[readDue].QueryContext(ctx, dueArgs(now, limit)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: due runs: %w", err)
	}
	rs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: due runs: %w", err)
	}
	return rs, nil
}

// dueSQL selects the due runs in DueRuns order, up to a limit, that also
// meet cond (" AND ..."; it may use the parameters). Its parameters are
// dueArgs: ?1 and ?2 the pending and running statuses, ?3 the suspended
// one, ?4 now, ?5 the limit (-1: none). Each kind of due run is found by
// an index range scan (the first ?5 of each kind, enough for the first
// ?5 overall), so the cost follows the number of due runs, not of
// suspended ones; the indexes are named, since without statistics
// SQLite's planner may scan every suspended run instead. A suspended run that a settlement or its cancellation
// waits for has waiting = 1 (see waitingSQL). A paused run is never due.
func dueSQL(cond string) string {
	cond = " AND paused_at = 0" + cond
	return `SELECT ` + runColumns + ` FROM runs WHERE rowid IN (
	SELECT rowid FROM (SELECT rowid FROM runs INDEXED BY runs_status WHERE status IN (?1, ?2)` + cond + ` ORDER BY wake_at, id LIMIT ?5)
	UNION ALL SELECT rowid FROM (SELECT rowid FROM runs INDEXED BY runs_status_wake WHERE status = ?3 AND wake_at > 0 AND wake_at <= ?4` + cond + ` ORDER BY wake_at, id LIMIT ?5)
	UNION ALL SELECT rowid FROM (SELECT rowid FROM runs INDEXED BY runs_status_deadline WHERE status = ?3 AND deadline > 0 AND deadline <= ?4 AND cancel = ''` + cond + ` ORDER BY wake_at, id LIMIT ?5)
	UNION ALL SELECT rowid FROM (SELECT rowid FROM runs INDEXED BY runs_waiting WHERE waiting = 1 AND status = ?3` + cond + ` ORDER BY wake_at, id LIMIT ?5))
ORDER BY wake_at, id LIMIT ?5`
}

// dueArgs returns the parameters of dueSQL.
func dueArgs(now int64, limit int) []any {
	return []any{string(store.RunPending), string(store.RunRunning), string(store.RunSuspended), now, limit}
}

// waitingSQL sets runs.waiting of run ? to whether it is suspended and a
// settlement or its cancellation waits to be delivered to it. Every write
// that can change that runs it, in its transaction: Settle,
// RequestCancel, and a batch, for each run it touches. (A run that is
// neither suspended nor waiting is left alone: no write.)
const waitingSQL = `UPDATE runs SET waiting = CASE WHEN status = '` + string(store.RunSuspended) + `' THEN (
	EXISTS (SELECT 1 FROM settlements s JOIN outcomes o ON o.run_id = s.run_id AND o.key = s.key
		WHERE s.run_id = runs.id AND o.status = '` + string(store.OutcomePending) + `')
	OR (cancel <> '' AND NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.run_id = runs.id AND o.key = '` + store.CancelKey + `'))) ELSE 0 END
WHERE id = ? AND (status = '` + string(store.RunSuspended) + `' OR waiting = 1)`

// settlementsSQL reads the settlements of run ?1 whose outcome has
// status ?2 (prepared once: readSQL).
const settlementsSQL = `SELECT s.key, s.status, s.value, s.error, s.attempts, s.created_at
FROM settlements s JOIN outcomes o ON o.run_id = s.run_id AND o.key = s.key
WHERE s.run_id = ? AND o.status = ? ORDER BY s.created_at, s.key`

// Settlements returns the run's settlements not yet delivered. See
// store.Store.
func (d *DB) Settlements(ctx context.Context, runID string) ([]store.Settlement, error) {
	rows, err := d.rd[readSettlements].QueryContext(ctx, runID, string(store.OutcomePending))
	if err != nil {
		return nil, fmt.Errorf("sqlite store: settlements of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.Settlement
	for rows.Next() {
		s := store.Settlement{RunID: runID}
		var status string
		var created int64
		if err := rows.Scan(&s.Key, &status, &s.Value, &s.Error, &s.Attempts, &created); err != nil {
			return nil, fmt.Errorf("sqlite store: settlements of %s: %w", runID, err)
		}
		s.Status = store.OutcomeStatus(status)
		s.CreatedAt = time.Unix(0, created)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: settlements of %s: %w", runID, err)
	}
	return out, nil
}

// rowsOf are *sql.Rows or the writer's *rawRows.
type rowsOf interface {
	rowscan.Scanner
	Next() bool
	Err() error
	Close() error
}

// scanRuns reads the runs of rows and closes it.
func scanRuns(rows rowsOf) ([]store.Run, error) {
	defer rows.Close()
	var rs []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, rows.Err()
}
