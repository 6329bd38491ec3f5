package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
)

// checkFence checks b's fence, if any, inside the commit's transaction:
// every outcome and run update is for the fenced run, and its lease is
// still the run's current one. The check locks the run's row (FOR NO KEY
// UPDATE) until the transaction ends, so no claim, renewal or release of
// the run can slip in between the check and the commit.
func checkFence(ctx context.Context, tx pgx.Tx, b *store.Batch) error {
	f := b.Fence
	if f == nil {
		return nil
	}
	for i := range b.Outcomes {
		if id := b.Outcomes[i].RunID; id != f.RunID {
			return fmt.Errorf("fenced batch for run %s writes an outcome of run %s", f.RunID, id)
		}
	}
	for i := range b.Runs {
		if id := b.Runs[i].ID; id != f.RunID {
			return fmt.Errorf("fenced batch for run %s updates run %s", f.RunID, id)
		}
	}
	return lockLease(ctx, tx, *f)
}

// lockLease locks l's run row and fails with store.ErrLeaseLost (wrapped)
// unless l is its current lease.
func lockLease(ctx context.Context, tx pgx.Tx, l store.Lease) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM runs
WHERE id = $1 AND lease_owner <> '' AND lease_owner = $2 AND lease_token = $3 FOR NO KEY UPDATE`,
		l.RunID, l.Owner, l.Token).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("run %s lease %d of %q: %w", l.RunID, l.Token, l.Owner, store.ErrLeaseLost)
	}
	return err
}

// claimSQL claims the due runs whose lease is free or expired, skipping
// rows another transaction has locked (a concurrent claim, or a commit to
// the run in progress): concurrent claimers each take different runs
// without waiting for one another. The UPDATE checks the lease again on
// the row it locked, so a run claimed by a transaction that committed
// after this one's snapshot is not taken twice.
var claimSQL = `WITH c AS (
	SELECT id FROM runs r
	WHERE (status IN ($1, $2)
	OR (status = $3 AND (
		(wake_at > 0 AND wake_at <= $4)
		OR (deadline > 0 AND deadline <= $4 AND cancel = '')
		OR (cancel <> '' AND NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.run_id = r.id AND o.key = $5))
		OR EXISTS (SELECT 1 FROM settlements s JOIN outcomes o ON o.run_id = s.run_id AND o.key = s.key
			WHERE s.run_id = r.id AND o.status = $6))))
	AND (lease_owner = '' OR lease_expiry <= $4)
	ORDER BY wake_at, id LIMIT $7
	FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE runs SET lease_owner = $8, lease_token = runs.lease_token + 1, lease_expiry = $9
FROM c WHERE runs.id = c.id AND (runs.lease_owner = '' OR runs.lease_expiry <= $4)
RETURNING ` + qualifiedRunColumns

// qualifiedRunColumns is runColumns qualified by the runs table.
var qualifiedRunColumns = "runs." + strings.ReplaceAll(runColumns, ", ", ", runs.")

// ClaimRuns claims due runs whose lease is free or expired, in one
// transaction, with SELECT ... FOR NO KEY UPDATE SKIP LOCKED. See
// store.Store.
func (d *DB) ClaimRuns(ctx context.Context, owner string, now int64, ttl time.Duration, limit int) ([]store.ClaimedRun, error) {
	if owner == "" || ttl <= 0 {
		return nil, fmt.Errorf("postgres store: claim runs: need an owner and a positive ttl (got %q, %v)", owner, ttl)
	}
	var lim any // NULL: no limit
	if limit > 0 {
		lim = int64(limit)
	}
	expiry := now + int64(ttl)
	var out []store.ClaimedRun
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		out = out[:0] // the transaction may run again
		rows, err := tx.Query(ctx, claimSQL,
			string(store.RunPending), string(store.RunRunning), string(store.RunSuspended), now,
			store.CancelKey, string(store.OutcomePending), lim, owner, expiry)
		if err != nil {
			return err
		}
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, store.ClaimedRun{Run: r, Lease: store.Lease{RunID: r.ID, Owner: owner, Token: r.LeaseToken, Expiry: expiry}})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		var pb pgx.Batch
		for _, c := range out {
			pb.Queue(`INSERT INTO leases (run_id, token, owner, claimed_at, expiry) VALUES ($1, $2, $3,
				GREATEST($4::BIGINT, COALESCE((SELECT released_at FROM leases WHERE run_id = $1 AND token = $2::BIGINT - 1), 0)), $5)`,
				c.Lease.RunID, c.Lease.Token, owner, now, expiry)
		}
		return tx.SendBatch(ctx, &pb).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres store: claim runs: %w", err)
	}
	slices.SortFunc(out, func(a, b store.ClaimedRun) int {
		return cmp.Or(cmp.Compare(a.Run.WakeAt, b.Run.WakeAt), strings.Compare(a.Run.ID, b.Run.ID))
	})
	return out, nil
}

// RenewLease extends a lease still held. See store.Store.
func (d *DB) RenewLease(ctx context.Context, l store.Lease, expiry int64) error {
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET lease_expiry = $1
WHERE id = $2 AND lease_owner <> '' AND lease_owner = $3 AND lease_token = $4`, expiry, l.RunID, l.Owner, l.Token)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("run %s lease %d of %q: %w", l.RunID, l.Token, l.Owner, store.ErrLeaseLost)
		}
		_, err = tx.Exec(ctx, `UPDATE leases SET expiry = $1 WHERE run_id = $2 AND token = $3`, expiry, l.RunID, l.Token)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: renew lease: %w", err)
	}
	return nil
}

// ReleaseLease gives up a lease still held. See store.Store.
func (d *DB) ReleaseLease(ctx context.Context, l store.Lease) error {
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET lease_owner = '', lease_expiry = 0
WHERE id = $1 AND lease_owner <> '' AND lease_owner = $2 AND lease_token = $3`, l.RunID, l.Owner, l.Token)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("run %s lease %d of %q: %w", l.RunID, l.Token, l.Owner, store.ErrLeaseLost)
		}
		_, err = tx.Exec(ctx, `UPDATE leases SET released_at = $1 WHERE run_id = $2 AND token = $3`,
			time.Now().UnixNano(), l.RunID, l.Token)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: release lease: %w", err)
	}
	return nil
}

// LeaseHistory returns every claim of a run in token order. See
// store.Store.
func (d *DB) LeaseHistory(ctx context.Context, runID string) ([]store.LeaseRecord, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: lease history of %s: %w", runID, err)
	}
	rows, err := d.pool.Query(ctx, `SELECT owner, token, claimed_at, expiry, released_at
FROM leases WHERE run_id = $1 ORDER BY token`, runID)
	if err != nil {
		return nil, fmt.Errorf("postgres store: lease history of %s: %w", runID, d.wrapClosed(err))
	}
	defer rows.Close()
	var out []store.LeaseRecord
	for rows.Next() {
		l := store.LeaseRecord{RunID: runID}
		if err := rows.Scan(&l.Owner, &l.Token, &l.ClaimedAt, &l.Expiry, &l.ReleasedAt); err != nil {
			return nil, fmt.Errorf("postgres store: lease history of %s: %w", runID, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: lease history of %s: %w", runID, d.wrapClosed(err))
	}
	return out, nil
}
