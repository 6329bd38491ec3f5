package sqlite

import (
	"context"
	"fmt"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Retention (store.PruneStore): a batch is found and deleted in one
// write transaction; the cascade of the runs' foreign keys deletes what
// belongs to them. The pages the batch freed go back to the file system
// at once (PRAGMA incremental_vacuum) in a database created with
// auto_vacuum INCREMENTAL (every database this build creates; see
// Vacuum for older ones); in any database SQLite reuses them for new
// rows.

// queryOn is a rowscan.Query on a transaction or a pool.
func queryOn[R rowsOf](ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (R, error)
}) rowscan.Query {
	return func(s string, args []any, row func(rowscan.Scanner) error) error {
		rows, err := q.QueryContext(ctx, s, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := row(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}

// PruneRuns deletes up to limit runs that may be pruned at before. See
// store.PruneStore.
func (d *DB) PruneRuns(ctx context.Context, ns string, before int64, limit int, dryRun bool) (store.PruneResult, error) {
	if dryRun {
		res, err := rowscan.PrunePlan(queryOn(ctx, d.rdb), "?", ns, before, limit)
		if err != nil {
			return store.PruneResult{}, fmt.Errorf("sqlite store: prune runs (dry run): %w", err)
		}
		return res, nil
	}
	var res store.PruneResult
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var err error
		if res, err = rowscan.PrunePlan(queryOn(w.ctx, w.tx), "?", ns, before, limit); err != nil {
			return err
		}
		for _, id := range res.IDs {
			if _, err := w.tx.ExecContext(w.ctx, `DELETE FROM runs WHERE id = ?`, id); err != nil {
				return err
			}
		}
		if len(res.IDs) == 0 {
			return nil
		}
		_, err = w.tx.ExecContext(w.ctx, `PRAGMA incremental_vacuum`)
		return err
	}})
	if err != nil {
		return store.PruneResult{}, fmt.Errorf("sqlite store: prune runs: %w", err)
	}
	return res, nil
}

// DeleteRun deletes one ended run that nothing needs. See
// store.PruneStore.
func (d *DB) DeleteRun(ctx context.Context, id string) error {
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		if err := rowscan.DeleteRefusal(queryOn(w.ctx, w.tx), "?", id); err != nil {
			return err
		}
		if _, err := w.tx.ExecContext(w.ctx, `DELETE FROM runs WHERE id = ?`, id); err != nil {
			return err
		}
		_, err := w.tx.ExecContext(w.ctx, `PRAGMA incremental_vacuum`)
		return err
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: delete run %s: %w", id, err)
	}
	return nil
}
