package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// markResetSQL marks run ?3 reset as run ?1 and releases its lease: the
// one change of an ended run that the write-once trigger allows (schema
// migration 17).
const markResetSQL = `UPDATE runs SET status = '` + string(store.RunReset) + `', reset_to = ?, updated_at = ?,
	lease_owner = '', lease_expiry = 0, waiting = 0 WHERE id = ?`

// ResetRun creates the new run of r and marks r.From reset, in one
// transaction. See store.Store.
func (d *DB) ResetRun(ctx context.Context, r store.Reset) (store.Run, error) {
	if err := r.Check(); err != nil {
		return store.Run{}, fmt.Errorf("sqlite store: %w", err)
	}
	var out store.Run
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		old, err := scanRun(w.stmt(sqlRunRow).QueryRowContext(w.ctx, r.From))
		if err != nil {
			return err
		}
		if !old.Status.CanReset() {
			return store.ResetRefusedError(old)
		}
		if _, err := scanRun(w.stmt(sqlRunRow).QueryRowContext(w.ctx, r.Batch.Creates[0].ID)); err == nil {
			return store.CreateConflictError(r.Batch.Creates[0].ID)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		b := r.Batch
		if err := (&request{ctx: w.ctx, batch: &b}).run(w); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		if old.LeaseOwner != "" {
			if _, err := w.stmt(sqlReleaseLease).ExecContext(w.ctx, now, old.ID, old.LeaseToken); err != nil {
				return fmt.Errorf("release lease of run %s: %w", old.ID, err)
			}
		}
		id := b.Creates[0].ID
		if _, err := w.tx.ExecContext(w.ctx, markResetSQL, id, now, old.ID); err != nil {
			return fmt.Errorf("mark run %s reset: %w", old.ID, immutable(err))
		}
		out, err = scanRun(w.stmt(sqlRunRow).QueryRowContext(w.ctx, id))
		return err
	}})
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite store: reset %s: %w", r.From, err)
	}
	return out, nil
}
