package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
)

// The statements of ResetRun: the run reset is locked and read first, and
// marked reset (its lease released, the history stamped) last, the one
// change of an ended run the write-once trigger allows (schema
// migration 14).
const (
	lockResetSQL = `SELECT ` + runColumns + ` FROM runs WHERE id = $1 FOR UPDATE`
	markResetSQL = `UPDATE runs SET status = '` + string(store.RunReset) + `', reset_to = $1, updated_at = $2,
	lease_owner = '', lease_expiry = 0, waiting = false WHERE id = $3`
	stampResetSQL = `UPDATE leases SET released_at = $1 WHERE run_id = $2 AND token = $3`
)

// ResetRun creates the new run of r and marks r.From reset, in one
// transaction. See store.Store.
func (d *DB) ResetRun(ctx context.Context, r store.Reset) (store.Run, error) {
	if err := r.Check(); err != nil {
		return store.Run{}, fmt.Errorf("postgres store: %w", err)
	}
	if unstorable(r.From) {
		return store.Run{}, fmt.Errorf("postgres store: reset %s: %w", store.CleanText(r.From), store.ErrNotFound)
	}
	id := r.Batch.Creates[0].ID
	var out store.Run
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		old, err := scanRun(tx.QueryRow(ctx, lockResetSQL, r.From))
		if err != nil {
			return err
		}
		if !old.Status.CanReset() {
			return store.ResetRefusedError(old)
		}
		if _, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id)); err == nil {
			return store.CreateConflictError(id)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := commitTx(ctx, tx, &r.Batch); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		if old.LeaseOwner != "" {
			if _, err := tx.Exec(ctx, stampResetSQL, now, old.ID, old.LeaseToken); err != nil {
				return fmt.Errorf("release lease of run %s: %w", old.ID, err)
			}
		}
		if _, err := tx.Exec(ctx, markResetSQL, id, now, old.ID); err != nil {
			return fmt.Errorf("mark run %s reset: %w", old.ID, err)
		}
		out, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("postgres store: reset %s: %w", r.From, err)
	}
	return out, nil
}
