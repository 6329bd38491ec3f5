package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
)

// upsertAttemptSQL writes one attempt, keeping a non-zero start or end and
// a non-empty error stored already (see store.Attempt).
const upsertAttemptSQL = `INSERT INTO attempts (run_id, key, n, started_at, ended_at, error) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (run_id, key, n) DO UPDATE SET
	started_at = CASE WHEN attempts.started_at <> 0 THEN attempts.started_at ELSE excluded.started_at END,
	ended_at = CASE WHEN attempts.ended_at <> 0 THEN attempts.ended_at ELSE excluded.ended_at END,
	error = CASE WHEN attempts.error <> '' THEN attempts.error ELSE excluded.error END`

// queueAttempts queues the upserts of a batch's attempts.
func queueAttempts(pb *pgx.Batch, attempts []store.RunAttempt) {
	for i := range attempts {
		ra := &attempts[i]
		a := &ra.Attempt
		pb.Queue(upsertAttemptSQL, ra.RunID, a.Key, int64(a.N), a.Start, a.End, a.Error)
	}
}

// readAttempts reads the results of queueAttempts.
func readAttempts(br pgx.BatchResults, attempts []store.RunAttempt) error {
	for i := range attempts {
		if _, err := br.Exec(); err != nil {
			ra := &attempts[i]
			return fmt.Errorf("attempt %s/%s#%d: %w", ra.RunID, ra.Attempt.Key, ra.Attempt.N, err)
		}
	}
	return nil
}

// Attempts returns every attempt of a run by key, then N. See
// store.Store.
func (d *DB) Attempts(ctx context.Context, runID string) ([]store.Attempt, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: attempts of %s: %w", runID, err)
	}
	if unstorable(runID) {
		return nil, nil
	}
	rows, err := d.pool.Query(ctx, `SELECT key, n, started_at, ended_at, error FROM attempts WHERE run_id = $1 ORDER BY key, n`, runID)
	if err != nil {
		return nil, fmt.Errorf("postgres store: attempts of %s: %w", runID, d.wrapClosed(err))
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		var a store.Attempt
		var n int64
		if err := rows.Scan(&a.Key, &n, &a.Start, &a.End, &a.Error); err != nil {
			return nil, fmt.Errorf("postgres store: attempts of %s: %w", runID, err)
		}
		a.N = int(n)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: attempts of %s: %w", runID, d.wrapClosed(err))
	}
	return out, nil
}
