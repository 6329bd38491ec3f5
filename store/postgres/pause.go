package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
)

// PauseRun marks a run paused unless it is already (the first pause
// stays) or has ended. See store.Store.
func (d *DB) PauseRun(ctx context.Context, runID, by, reason string, at int64) (store.Run, error) {
	if err := store.CheckPause(by, reason, at); err != nil {
		return store.Run{}, fmt.Errorf("postgres store: pause %s: %w", runID, err)
	}
	r, err := d.setPause(ctx, runID, store.Pausing(by, reason, at))
	if err != nil {
		return store.Run{}, fmt.Errorf("postgres store: pause: %w", err)
	}
	return r, nil
}

// UnpauseRun clears a run's pause. See store.Store.
func (d *DB) UnpauseRun(ctx context.Context, runID string) (store.Run, error) {
	r, err := d.setPause(ctx, runID, store.Unpausing)
	if err != nil {
		return store.Run{}, fmt.Errorf("postgres store: unpause: %w", err)
	}
	return r, nil
}

// setPause reads run id, locked, and, if decide says so, writes the
// pause it returns, in one transaction; it returns the run as stored
// after.
func (d *DB) setPause(ctx context.Context, id string, decide store.SetPause) (store.Run, error) {
	if unstorable(id) {
		return store.Run{}, fmt.Errorf("run %s: %w", store.CleanText(id), store.ErrNotFound)
	}
	var r store.Run
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if r, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1 FOR NO KEY UPDATE`, id)); err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		p, write, err := decide(r)
		if err != nil || !write {
			return err
		}
		now := time.Now().UnixNano()
		if _, err := tx.Exec(ctx, `UPDATE runs SET paused_by = $1, pause_reason = $2, paused_at = $3, updated_at = $4 WHERE id = $5`,
			p.By, p.Reason, p.At, now, id); err != nil {
			return err
		}
		r.Paused, r.UpdatedAt = p, time.Unix(0, now)
		return nil
	})
	return r, err
}
