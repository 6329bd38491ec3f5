package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// claimSQL claims the due runs whose lease is free or expired, skipping
// rows another transaction has locked (a concurrent claim, or a commit to
// the run in progress): concurrent claimers each take different runs
// without waiting for one another. The UPDATE checks the lease again on
// the row it locked, so a run claimed by a transaction that committed
// after this one's snapshot is not taken twice. The candidates come from
// dueIDs (index range scans), four times the limit of each kind, so that
// runs locked by concurrent claimers leave others to take. The same statement
// records each claim in the lease history (at the claimer's now, or at
// the previous lease's release if that is later: see
// store.LeaseRecord.ClaimedAt; the release is read FOR SHARE, which reads
// its latest committed version, not the statement's snapshot, which may
// predate it), so a claim is one round trip.
var claimSQL = `WITH c AS (
	SELECT id FROM runs
	WHERE id IN (` + dueIDs(claimable, "4 * $5") + `) AND ` + dueNow + claimable + `
	ORDER BY wake_at, id LIMIT $5
	FOR NO KEY UPDATE SKIP LOCKED
), u AS (
	UPDATE runs SET lease_owner = $6, lease_token = runs.lease_token + 1, lease_expiry = $7
	FROM c WHERE runs.id = c.id AND ` + dueNow + claimable + `
	RETURNING ` + qualifiedRunColumns + `
), l AS (
	INSERT INTO leases (run_id, token, owner, claimed_at, expiry)
	SELECT u.id, u.lease_token, $6, GREATEST($4::BIGINT, COALESCE(
		(SELECT p.released_at FROM leases p WHERE p.run_id = u.id AND p.token = u.lease_token - 1 FOR SHARE), 0)), $7
	FROM u
)
SELECT ` + runColumns + ` FROM u`

// claimable is the condition of a run whose lease is free or expired.
const claimable = ` AND (lease_owner = '' OR lease_expiry <= $4)`

// dueNow is the due condition (dueIDs' parameters) on the runs row
// itself. The candidates come from dueIDs, evaluated on the statement's
// snapshot; when a candidate was changed by a transaction that committed
// since (another worker ended or claimed it), locking the row re-checks
// only the conditions on the row itself, so claimSQL states them again
// there: a run that ended meanwhile is not claimed.
const dueNow = `paused_at = 0 AND (status IN ($1, $2) OR (status = $3 AND ((wake_at > 0 AND wake_at <= $4)
	OR (deadline > 0 AND deadline <= $4 AND cancel = '') OR waiting)))`

// qualifiedRunColumns is runColumns qualified by the runs table.
var qualifiedRunColumns = "runs." + strings.ReplaceAll(runColumns, ", ", ", runs.")

// ClaimRuns claims due runs whose lease is free or expired, in one
// statement, with SELECT ... FOR NO KEY UPDATE SKIP LOCKED. See
// store.Store.
func (d *DB) ClaimRuns(ctx context.Context, owner string, now int64, ttl time.Duration, limit int) ([]store.ClaimedRun, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return nil, fmt.Errorf("postgres store: claim runs: %w", err)
	}
	var lim any // NULL: no limit
	if limit > 0 {
		lim = int64(limit)
	}
	expiry := now + int64(ttl)
	var out []store.ClaimedRun
	err := d.inStmt(ctx, func() error {
		out = out[:0] // the statement may run again
		rows, err := d.pool.Query(ctx, claimSQL, append(dueArgs(now, lim), owner, expiry)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			out = append(out, store.ClaimedRun{Run: r, Lease: store.Lease{RunID: r.ID, Owner: owner, Token: r.LeaseToken, Expiry: expiry}})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres store: claim runs: %w", err)
	}
	slices.SortFunc(out, func(a, b store.ClaimedRun) int {
		return cmp.Or(cmp.Compare(a.Run.WakeAt, b.Run.WakeAt), strings.Compare(a.Run.ID, b.Run.ID))
	})
	return out, nil
}

// claimOneSQL claims run $1 for owner $2 until $4 if its lease is free or
// expired at $3, and records the claim in the history, in one statement
// (as claimSQL does for due runs). It returns the run when it claimed it.
var claimOneSQL = `WITH u AS (
	UPDATE runs SET lease_owner = $2, lease_token = runs.lease_token + 1, lease_expiry = $4
	WHERE id = $1 AND (lease_owner = '' OR lease_expiry <= $3) AND paused_at = 0
	RETURNING ` + qualifiedRunColumns + `
), l AS (
	INSERT INTO leases (run_id, token, owner, claimed_at, expiry)
	SELECT u.id, u.lease_token, $2, GREATEST($3::BIGINT, COALESCE(
		(SELECT p.released_at FROM leases p WHERE p.run_id = u.id AND p.token = u.lease_token - 1 FOR SHARE), 0)), $4
	FROM u
)
SELECT ` + runColumns + ` FROM u`

// ClaimRun claims one run, whatever its status, if its lease is free or
// expired and it is not paused. See store.Store.
func (d *DB) ClaimRun(ctx context.Context, id, owner string, now int64, ttl time.Duration) (store.ClaimedRun, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return store.ClaimedRun{}, fmt.Errorf("postgres store: claim run %s: %w", id, err)
	}
	expiry := now + int64(ttl)
	var out store.ClaimedRun
	err := d.inStmt(ctx, func() error {
		for range 3 { // the lease may be released between the claim and the read below
			r, err := scanRun(d.pool.QueryRow(ctx, claimOneSQL, id, owner, now, expiry))
			if err == nil {
				out = store.ClaimedRun{Run: r, Lease: store.Lease{RunID: id, Owner: owner, Token: r.LeaseToken, Expiry: expiry}}
				return nil
			}
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			cur, err := scanRun(d.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
			if err != nil {
				return err // store.ErrNotFound for an unknown run
			}
			if cur.LeaseOwner != "" && cur.LeaseExpiry > now {
				return &store.LeaseHeldError{Lease: store.Lease{RunID: id, Owner: cur.LeaseOwner, Token: cur.LeaseToken, Expiry: cur.LeaseExpiry}}
			}
			if cur.IsPaused() {
				return &store.PausedError{RunID: id, Pause: cur.Paused}
			}
		}
		return fmt.Errorf("the lease of run %s changed hands three times during the claim", id)
	})
	if err != nil {
		return store.ClaimedRun{}, fmt.Errorf("postgres store: claim run %s: %w", id, err)
	}
	return out, nil
}

// RenewLease extends a lease still held, in one statement. See
// store.Store.
func (d *DB) RenewLease(ctx context.Context, l store.Lease, expiry int64) error {
	err := d.leaseStmt(ctx, l, `WITH r AS (
	UPDATE runs SET lease_expiry = $4
	WHERE id = $1 AND lease_owner <> '' AND lease_owner = $2 AND lease_token = $3
	RETURNING id
)
UPDATE leases SET expiry = $4 FROM r WHERE leases.run_id = r.id AND leases.token = $3`, expiry)
	if err != nil {
		return fmt.Errorf("postgres store: renew lease: %w", err)
	}
	return nil
}

// releaseLeaseSQL releases the lease of run $1 if it is still owner $2
// with token $3, stamping its history with $4.
const releaseLeaseSQL = `WITH r AS (
	UPDATE runs SET lease_owner = '', lease_expiry = 0
	WHERE id = $1 AND lease_owner <> '' AND lease_owner = $2 AND lease_token = $3
	RETURNING id
)
UPDATE leases SET released_at = $4 FROM r WHERE leases.run_id = r.id AND leases.token = $3`

// ReleaseLease gives up a lease still held, in one statement. See
// store.Store.
func (d *DB) ReleaseLease(ctx context.Context, l store.Lease) error {
	err := d.leaseStmt(ctx, l, releaseLeaseSQL, time.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("postgres store: release lease: %w", err)
	}
	return nil
}

// leaseStmt runs sql, a statement that updates run $1 if its lease is
// still owner $2 with token $3 and then the lease's history row, with $4
// = arg. It fails with store.ErrLeaseLost (wrapped) when the lease is not
// the run's current one: nothing was updated. (Every claim records its
// history row in the statement that takes the lease, so a current lease
// always has one.)
func (d *DB) leaseStmt(ctx context.Context, l store.Lease, sql string, arg int64) error {
	if unstorable(l.RunID, l.Owner) {
		return l.LostError() // no stored lease has such an owner
	}
	return d.inStmt(ctx, func() error {
		tag, err := d.pool.Exec(ctx, sql, l.RunID, l.Owner, l.Token, arg)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return l.LostError()
		}
		return nil
	})
}

// LeaseHistory returns every claim of a run in token order. See
// store.Store.
func (d *DB) LeaseHistory(ctx context.Context, runID string) ([]store.LeaseRecord, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: lease history of %s: %w", runID, err)
	}
	if unstorable(runID) {
		return nil, nil
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
