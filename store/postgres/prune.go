package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Retention (store.PruneStore): a batch is found and deleted in one
// transaction; the cascade of the runs' foreign keys deletes what
// belongs to them. Autovacuum makes the space of the deleted rows
// reusable (docs/operations.md, "Retention").

// querier is what queryOn reads through: a transaction or the pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// queryOn is a rowscan.Query on q.
func queryOn(ctx context.Context, q querier) rowscan.Query {
	return func(s string, args []any, row func(rowscan.Scanner) error) error {
		rows, err := q.Query(ctx, s, args...)
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
		if err := d.check(ctx); err != nil {
			return store.PruneResult{}, fmt.Errorf("postgres store: prune runs (dry run): %w", err)
		}
		res, err := rowscan.PrunePlan(queryOn(ctx, d.pool), "$", ns, before, limit)
		if err != nil {
			return store.PruneResult{}, fmt.Errorf("postgres store: prune runs (dry run): %w", d.wrapClosed(err))
		}
		return res, nil
	}
	var res store.PruneResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if res, err = rowscan.PrunePlan(queryOn(ctx, tx), "$", ns, before, limit); err != nil || len(res.IDs) == 0 {
			return err
		}
		// Only an ended run: a failed one that Host.Resume took up
		// since the plan read it stays.
		_, err = tx.Exec(ctx, `DELETE FROM runs WHERE id = ANY($1) AND status = ANY($2)`, res.IDs, terminalStatuses())
		return err
	})
	if err != nil {
		return store.PruneResult{}, fmt.Errorf("postgres store: prune runs: %w", err)
	}
	return res, nil
}

// terminalStatuses is store.TerminalStatuses as strings.
func terminalStatuses() []string {
	var ss []string
	for _, s := range store.TerminalStatuses() {
		ss = append(ss, string(s))
	}
	return ss
}

// DeleteRun deletes one ended run that nothing needs. See
// store.PruneStore.
func (d *DB) DeleteRun(ctx context.Context, id string) error {
	if unstorable(id) {
		return fmt.Errorf("postgres store: delete run %s: %w", store.CleanText(id), store.ErrNotFound)
	}
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		// Locked, so that it does not change between the rules' reads
		// and the delete (Host.Resume taking up a failed run).
		if _, err := tx.Exec(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, id); err != nil {
			return err
		}
		if err := rowscan.DeleteRefusal(queryOn(ctx, tx), "$", id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM runs WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: delete run %s: %w", id, err)
	}
	return nil
}
