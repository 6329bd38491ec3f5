package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/skeinrun/skein/store"
)

// request is one unit of writing handed to the writer goroutine. A Commit
// carries its batch; any other write carries apply. Both run inside a
// transaction the writer may share with other requests, and must be safe to
// run again after a rollback.
type request struct {
	ctx   context.Context
	batch *store.Batch       // a Commit; nil for other writes
	apply func(w *wtx) error // other writes
	done  chan error         // buffered; receives exactly one answer
}

func (r *request) run(w *wtx) error {
	if r.batch != nil {
		if err := checkBatch(w, r.batch, nil); err != nil {
			return err
		}
		if err := applyBatch(w, r.batch.Creates, r.batch.Outcomes, r.batch.Runs, r.batch.Settlements, r.batch.Tasks, r.batch.Attempts); err != nil {
			return err
		}
		if err := writeBatchAttrs(w, r.batch.Attrs); err != nil {
			return err
		}
		if err := applyParentEnded(w, r.batch.ParentEnded); err != nil {
			return err
		}
		if r.batch.Release {
			return releaseLease(w, *r.batch.Fence)
		}
		return nil
	}
	return r.apply(w)
}

// outcomeChunk is the most outcome rows one multi-row upsert writes. One
// statement per chunk instead of one per row halves the cost of a batch.
const outcomeChunk = 32

// outcomeParams is the number of parameters of one outcome row.
const outcomeParams = 19

// upsertOutcomesSQL returns the upsert of n outcome rows. A key appearing
// twice is written twice, in order, so the last row wins; but a pending
// row never replaces a settled one (an activity's attempt counter written
// late must not undo its outcome), attempts never go down, and a non-zero
// started_at or settled_at stays.
func upsertOutcomesSQL(n int) string {
	return upsertSQL(allOutcomeCols, outcomeParams, n)
}

// upsertPlainSQL is upsertOutcomesSQL for n plain rows (allPlain):
// the columns they leave at their defaults are not bound. Binding costs
// the driver a call and often a copy per parameter, a quarter of the
// writer's time.
func upsertPlainSQL(n int) string {
	return upsertSQL(plainOutcomeCols, plainParams, n)
}

const (
	allOutcomeCols   = "run_id, key, kind, function, status, value, error, attempts, seq, waited, idle, wake_order, vtime, deadline, orphaned, updated_at, started_at, settled_at, schema"
	plainOutcomeCols = "run_id, key, kind, function, status, value, attempts, seq, vtime, updated_at, started_at, settled_at"
	plainParams      = 12
)

// upsertSQL is the upsert of n rows of the columns cols (params of them);
// a column left out is written with its default, on insert and on update.
func upsertSQL(cols string, params, n int) string {
	row := "(" + strings.Repeat("?, ", params-1) + "?)"
	return `
INSERT INTO outcomes (` + cols + `)
VALUES ` + strings.Repeat(row+", ", n-1) + row + `
ON CONFLICT (run_id, key) DO UPDATE SET
	kind = excluded.kind,
	function = excluded.function,
	status = excluded.status,
	value = excluded.value,
	error = excluded.error,
	attempts = max(outcomes.attempts, excluded.attempts),
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
	schema = coalesce(excluded.schema, outcomes.schema)
WHERE excluded.status <> 'pending' OR outcomes.status = 'pending'`
}

// wtx is the writer's open transaction on its connection (raw.go).
type wtx struct {
	ctx     context.Context
	c       *wconn
	tx      rawTx
	ended   bool     // committed or rolled back
	args    []any    // reused argument buffer
	touched []string // reused: the runs a batch wrote
}

func (d *DB) begin(c *wconn) (*wtx, error) {
	// One caller's cancellation must not abort the others.
	w := &wtx{ctx: context.Background(), c: c, tx: rawTx{c}, args: d.args[:0]}
	if _, err := c.exec(c.named[sqlBegin], nil); err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return w, nil
}

// commit commits the transaction; if that fails, it is rolled back.
func (w *wtx) commit() error {
	if _, err := w.c.exec(w.c.named[sqlCommit], nil); err != nil {
		w.rollback()
		return fmt.Errorf("commit: %w", err)
	}
	w.ended = true
	return nil
}

// rollback rolls the transaction back unless it has ended. Its error is
// not reported: SQLite may have rolled back already (a failed COMMIT),
// and the write's own error is the one to return.
func (w *wtx) rollback() {
	if w.ended {
		return
	}
	w.ended = true
	_, _ = w.c.exec(w.c.named[sqlRollback], nil)
}

// exec runs the statement id of namedSQL with no arguments.
func (w *wtx) exec(id sqlID) error {
	_, err := w.c.exec(w.c.named[id], nil)
	return err
}

func (w *wtx) upsertStmt(n int) rawStmt { return rawStmt{w.c, w.c.upsert[n]} }

// plainStmt returns the statement of upsertPlainSQL(outcomeChunk).
func (w *wtx) plainStmt() rawStmt { return rawStmt{w.c, w.c.plain} }

// stmt returns the statement id of namedSQL.
func (w *wtx) stmt(id sqlID) rawStmt { return rawStmt{w.c, w.c.named[id]} }

// write hands r to the writer goroutine and waits for its answer. If ctx
// ends before the writer takes the request up, the request is dropped and
// ctx's error returned; once taken up it is applied regardless, and write
// reports how that went: nil means committed, an error means not applied.
func (d *DB) write(r *request) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	r.done = make(chan error, 1)
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		return ErrClosed
	}
	select {
	case d.reqs <- r:
	case <-r.ctx.Done():
		d.mu.RUnlock()
		return r.ctx.Err()
	}
	d.mu.RUnlock()
	return d.full(<-r.done)
}

// writeLoop is the writer goroutine. It takes every queued request (up to
// maxGroup) and applies them in one transaction, until reqs is closed and
// drained.
func (d *DB) writeLoop() {
	defer close(d.done)
	group := make([]*request, 0, maxGroup)
	for req := range d.reqs {
		group = append(group[:0], req)
	drain:
		for len(group) < maxGroup {
			select {
			case r, ok := <-d.reqs:
				if !ok {
					break drain
				}
				group = append(group, r)
			default:
				break drain
			}
		}
		d.applyGroup(group)
		clear(group)
		if d.ckpt != nil {
			d.afterCommit()
		}
	}
}

// applyGroup applies the requests in queue order in one transaction and
// answers each. It first tries the fast path (applyMerged); if any request
// fails there, it applies them again with a savepoint each so that only
// the failing ones are rolled back (applyShared); if the shared transaction
// itself fails, each request is retried in a transaction of its own.
func (d *DB) applyGroup(group []*request) {
	live := group[:0]
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	err := d.withConn(context.Background(), func(c *wconn) error {
		d.applyOn(c, live)
		return nil
	})
	if err != nil { // applyOn did not run: nothing was applied
		d.log.Warn("sqlite store: no writer connection", "writes", len(live), "err", err)
		for _, r := range live {
			r.done <- err
		}
	}
}

// applyOn is applyGroup on the writer's connection c, for requests whose
// context has not ended.
func (d *DB) applyOn(c *wconn, live []*request) {
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].done <- d.applyAlone(c, live[0])
		return
	}
	if d.applyMerged(c, live) == nil {
		for _, r := range live {
			r.done <- nil
		}
		return
	}
	errs, err := d.applyShared(c, live)
	if err == nil {
		for i, r := range live {
			r.done <- errs[i]
		}
		return
	}
	d.log.Warn("sqlite store: group commit failed; retrying each write alone", "writes", len(live), "err", err)
	for _, r := range live {
		r.done <- d.applyAlone(c, r)
	}
}

// applyMerged applies the requests in one transaction, merging each run of
// consecutive Commit batches into one batch so that their outcome rows
// share multi-row statements. Merging keeps the order of writes within
// each table, which is all that matters: a batch's runs are created
// before any outcome or run update of the merge is written (a batch
// writes nothing else to a run it creates), and other writes (CreateRun,
// PutModule) end a merge. It fails as a whole if any request fails.
func (d *DB) applyMerged(c *wconn, reqs []*request) error {
	w, err := d.begin(c)
	if err != nil {
		return err
	}
	defer w.rollback()
	outs, runs := d.mergeOutcomes[:0], d.mergeRuns[:0]
	var creates []store.Run
	var sets []store.Settlement
	var tasks []store.Task
	var attempts []store.RunAttempt
	var parentEnded []store.ParentEnd
	var attrs []store.RunAttrs
	var ended map[string]store.RunStatus // runs the group's batches make final
	flush := func() error {
		err := applyBatch(w, creates, outs, runs, sets, tasks, attempts)
		if err == nil {
			err = applyParentEnded(w, parentEnded)
		}
		if err == nil {
			err = writeBatchAttrs(w, attrs)
		}
		clear(outs)
		clear(runs)
		creates, outs, runs, sets, tasks, attempts, parentEnded, attrs = creates[:0], outs[:0], runs[:0], sets[:0], tasks[:0], attempts[:0], parentEnded[:0], attrs[:0]
		return err
	}
	for _, r := range reqs {
		if r.batch != nil {
			// Batches write no lease columns, so checking the fence
			// before the batches merged so far are applied is the same
			// as checking it after. A release is applied at once (it
			// writes lease columns only), so that a later fence of the
			// same lease in this group fails its check.
			if err := checkBatch(w, r.batch, ended); err != nil {
				return err
			}
			ended = noteEnded(ended, r.batch)
			if r.batch.Release {
				if err := releaseLease(w, *r.batch.Fence); err != nil {
					return err
				}
			}
			creates = append(creates, r.batch.Creates...)
			outs = append(outs, r.batch.Outcomes...)
			runs = append(runs, r.batch.Runs...)
			sets = append(sets, r.batch.Settlements...)
			tasks = append(tasks, r.batch.Tasks...)
			attempts = append(attempts, r.batch.Attempts...)
			parentEnded = append(parentEnded, r.batch.ParentEnded...)
			attrs = append(attrs, r.batch.Attrs...)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if err := r.apply(w); err != nil {
			return err
		}
	}
	err = flush()
	d.mergeOutcomes, d.mergeRuns, d.args = outs, runs, w.args
	if err != nil {
		return err
	}
	return w.commit()
}

// applyShared applies the requests in one transaction with a savepoint
// each. It returns each request's own error, valid only when err is nil.
func (d *DB) applyShared(c *wconn, reqs []*request) (errs []error, err error) {
	w, err := d.begin(c)
	if err != nil {
		return nil, err
	}
	defer w.rollback()
	errs = make([]error, len(reqs))
	for i, r := range reqs {
		if err := w.exec(sqlSavepoint); err != nil {
			return nil, fmt.Errorf("savepoint: %w", err)
		}
		if errs[i] = r.run(w); errs[i] != nil {
			if err := w.exec(sqlRollbackTo); err != nil {
				return nil, fmt.Errorf("rollback to savepoint: %w (after %w)", err, errs[i])
			}
		}
		if err := w.exec(sqlRelease); err != nil {
			return nil, fmt.Errorf("release savepoint: %w", err)
		}
	}
	if err := w.commit(); err != nil {
		return nil, err
	}
	return errs, nil
}

// applyAlone applies one request in a transaction of its own.
func (d *DB) applyAlone(c *wconn, r *request) error {
	w, err := d.begin(c)
	if err != nil {
		return err
	}
	defer w.rollback()
	err = r.run(w)
	d.args = w.args
	if err != nil {
		return err
	}
	return w.commit()
}
