package sqlite

import (
	"context"
	"fmt"

	"github.com/skeinrun/skein/store"
)

// upsertAttemptSQL writes one attempt, keeping a non-zero start or end and
// a non-empty error stored already (see store.Attempt).
const upsertAttemptSQL = `INSERT INTO attempts (run_id, key, n, started_at, ended_at, error) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id, key, n) DO UPDATE SET
	started_at = CASE WHEN attempts.started_at <> 0 THEN attempts.started_at ELSE excluded.started_at END,
	ended_at = CASE WHEN attempts.ended_at <> 0 THEN attempts.ended_at ELSE excluded.ended_at END,
	error = CASE WHEN attempts.error <> '' THEN attempts.error ELSE excluded.error END`

// upsertAttempts writes the attempts of a batch.
func upsertAttempts(w *wtx, attempts []store.RunAttempt) error {
	for i := range attempts {
		ra := &attempts[i]
		a := &ra.Attempt
		if _, err := w.stmt(sqlUpsertAttempt).ExecContext(w.ctx, ra.RunID, a.Key, a.N, a.Start, a.End, a.Error); err != nil {
			return fmt.Errorf("attempt %s/%s#%d: %w", ra.RunID, a.Key, a.N, err)
		}
	}
	return nil
}

// attemptsSQL reads a run's attempts (prepared once: readSQL).
const attemptsSQL = `SELECT key, n, started_at, ended_at, error FROM attempts WHERE run_id = ? ORDER BY key, n`

// Attempts returns every attempt of a run by key, then N. See
// store.Store.
func (d *DB) Attempts(ctx context.Context, runID string) ([]store.Attempt, error) {
	rows, err := d.rd[readAttempts].QueryContext(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: attempts of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		var a store.Attempt
		if err := rows.Scan(&a.Key, &a.N, &a.Start, &a.End, &a.Error); err != nil {
			return nil, fmt.Errorf("sqlite store: attempts of %s: %w", runID, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: attempts of %s: %w", runID, err)
	}
	return out, nil
}
