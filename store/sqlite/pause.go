package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// setPauseSQL writes the pause of run ?4 (all empty and 0: none).
const setPauseSQL = `UPDATE runs SET paused_by = ?, pause_reason = ?, paused_at = ?, updated_at = ? WHERE id = ?`

// PauseRun marks a run paused unless it is already (the first pause
// stays) or has ended. See store.Store.
func (d *DB) PauseRun(ctx context.Context, runID, by, reason string, at int64) (store.Run, error) {
	if err := store.CheckPause(by, reason, at); err != nil {
		return store.Run{}, fmt.Errorf("sqlite store: pause %s: %w", runID, err)
	}
	r, err := d.setPause(ctx, runID, store.Pausing(by, reason, at))
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite store: pause: %w", err)
	}
	return r, nil
}

// UnpauseRun clears a run's pause. See store.Store.
func (d *DB) UnpauseRun(ctx context.Context, runID string) (store.Run, error) {
	r, err := d.setPause(ctx, runID, store.Unpausing)
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite store: unpause: %w", err)
	}
	return r, nil
}

// setPause reads run id in a write transaction and, if decide says so,
// writes the pause it returns; it returns the run as stored after.
func (d *DB) setPause(ctx context.Context, id string, decide store.SetPause) (store.Run, error) {
	var r store.Run
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		var err error
		if r, err = scanRun(w.stmt(sqlRunRow).QueryRowContext(w.ctx, id)); err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		p, write, err := decide(r)
		if err != nil || !write {
			return err
		}
		now := time.Now()
		if _, err := w.tx.ExecContext(w.ctx, setPauseSQL, p.By, p.Reason, p.At, now.UnixNano(), id); err != nil {
			return err
		}
		r.Paused, r.UpdatedAt = p, time.Unix(0, now.UnixNano())
		return nil
	}})
	return r, err
}
