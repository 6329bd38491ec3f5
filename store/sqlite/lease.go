package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skeinrun/skein/store"
)

// checkFence checks b's fence, if any, inside the writer's transaction:
// every outcome and run update is for the fenced run, and its lease is
// still the run's current one. Only the writer goroutine writes, so the
// lease cannot change between the check and the commit. It returns the
// fenced run's stored status ("" without a fence).
func checkFence(w *wtx, b *store.Batch) (store.RunStatus, error) {
	if err := b.CheckFenceWrites(); err != nil || b.Fence == nil {
		return "", err
	}
	return checkLease(w, *b.Fence)
}

// checkLease fails with store.ErrLeaseLost (wrapped) unless l is the
// current lease of its run; it returns the run's status.
func checkLease(w *wtx, l store.Lease) (store.RunStatus, error) {
	var st string
	err := w.stmt(sqlCheckLease).QueryRowContext(w.ctx, l.RunID, l.Owner, l.Token).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", l.LostError()
	}
	if err != nil {
		return "", fmt.Errorf("check lease of run %s: %w", l.RunID, err)
	}
	return store.RunStatus(st), nil
}

// ClaimRuns claims due runs whose lease is free or expired, in one queued
// write (the writer's transaction makes it atomic). See store.Store.
func (d *DB) ClaimRuns(ctx context.Context, owner string, now int64, ttl time.Duration, limit int) ([]store.ClaimedRun, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return nil, fmt.Errorf("sqlite store: claim runs: %w", err)
	}
	if limit <= 0 {
		limit = -1
	}
	expiry := now + int64(ttl)
	var out []store.ClaimedRun
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		out = out[:0] // the request may run again after a rollback
		rows, err := w.stmt(sqlClaimDue).QueryContext(w.ctx, dueArgs(now, limit)...)
		if err != nil {
			return err
		}
		rs, err := scanRuns(rows)
		if err != nil {
			return err
		}
		for _, r := range rs {
			c, err := claim(w, r, owner, now, expiry)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	}})
	if err != nil {
		return nil, fmt.Errorf("sqlite store: claim runs: %w", err)
	}
	return slices.Clip(out), nil
}

// The statements of the lease writes (prepared once: namedSQL).
const (
	// checkLeaseSQL reads the status of the run if the lease is its
	// current one (no row otherwise).
	checkLeaseSQL = `SELECT status FROM runs WHERE id = ? AND lease_owner <> '' AND lease_owner = ? AND lease_token = ?`
	claimRunSQL   = `UPDATE runs SET lease_owner = ?, lease_token = ?, lease_expiry = ? WHERE id = ?`
	// recordLeaseSQL adds a claim to the history; it starts no earlier
	// than the release of the claim before.
	recordLeaseSQL = `INSERT INTO leases (run_id, token, owner, claimed_at, expiry) VALUES (?1, ?2, ?3,
		MAX(?4, COALESCE((SELECT released_at FROM leases WHERE run_id = ?1 AND token = ?2 - 1), 0)), ?5)`
	renewRunSQL     = `UPDATE runs SET lease_expiry = ? WHERE id = ?`
	renewLeaseSQL   = `UPDATE leases SET expiry = ? WHERE run_id = ? AND token = ?`
	releaseRunSQL   = `UPDATE runs SET lease_owner = '', lease_expiry = 0 WHERE id = ?`
	releaseLeaseSQL = `UPDATE leases SET released_at = ? WHERE run_id = ? AND token = ?`
	leaseHistorySQL = `SELECT owner, token, claimed_at, expiry, released_at
FROM leases WHERE run_id = ? ORDER BY token`
)

// claimDueSQL selects the due runs whose lease is free or expired (see
// dueSQL, ClaimRuns).
var claimDueSQL = dueSQL(` AND (lease_owner = '' OR lease_expiry <= ?4)`)

// claim gives run r a new lease of owner until expiry and records it in
// the history, inside the writer's transaction; the caller has checked
// that the lease is free or expired.
func claim(w *wtx, r store.Run, owner string, now, expiry int64) (store.ClaimedRun, error) {
	r.LeaseOwner, r.LeaseToken, r.LeaseExpiry = owner, r.LeaseToken+1, expiry
	if _, err := w.stmt(sqlClaimRun).ExecContext(w.ctx, owner, r.LeaseToken, expiry, r.ID); err != nil {
		return store.ClaimedRun{}, fmt.Errorf("claim run %s: %w", r.ID, err)
	}
	if _, err := w.stmt(sqlRecordLease).ExecContext(w.ctx, r.ID, r.LeaseToken, owner, now, expiry); err != nil {
		return store.ClaimedRun{}, fmt.Errorf("claim run %s: record lease: %w", r.ID, err)
	}
	return store.ClaimedRun{Run: r, Lease: store.Lease{RunID: r.ID, Owner: owner, Token: r.LeaseToken, Expiry: expiry}}, nil
}

// ClaimRun claims one run, whatever its status, if its lease is free or
// expired, in one queued write. See store.Store.
func (d *DB) ClaimRun(ctx context.Context, id, owner string, now int64, ttl time.Duration) (store.ClaimedRun, error) {
	if err := store.CheckClaim(owner, ttl); err != nil {
		return store.ClaimedRun{}, fmt.Errorf("sqlite store: claim run %s: %w", id, err)
	}
	var out store.ClaimedRun
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		r, err := scanRun(w.stmt(sqlRunRow).QueryRowContext(w.ctx, id))
		if err != nil {
			return err // store.ErrNotFound for an unknown run
		}
		if r.LeaseOwner != "" && r.LeaseExpiry > now {
			return &store.LeaseHeldError{Lease: store.Lease{RunID: id, Owner: r.LeaseOwner, Token: r.LeaseToken, Expiry: r.LeaseExpiry}}
		}
		if r.IsPaused() {
			return &store.PausedError{RunID: id, Pause: r.Paused}
		}
		out, err = claim(w, r, owner, now, now+int64(ttl))
		return err
	}})
	if err != nil {
		return store.ClaimedRun{}, fmt.Errorf("sqlite store: claim run %s: %w", id, err)
	}
	return out, nil
}

// RenewLease extends a lease still held. See store.Store.
func (d *DB) RenewLease(ctx context.Context, l store.Lease, expiry int64) error {
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		if _, err := checkLease(w, l); err != nil {
			return err
		}
		if _, err := w.stmt(sqlRenewRun).ExecContext(w.ctx, expiry, l.RunID); err != nil {
			return err
		}
		_, err := w.stmt(sqlRenewLease).ExecContext(w.ctx, expiry, l.RunID, l.Token)
		return err
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: renew lease: %w", err)
	}
	return nil
}

// releaseLease clears the lease of l's run and stamps its history, inside
// the writer's transaction; the caller has checked the lease.
func releaseLease(w *wtx, l store.Lease) error {
	if _, err := w.stmt(sqlReleaseRun).ExecContext(w.ctx, l.RunID); err != nil {
		return fmt.Errorf("release lease of run %s: %w", l.RunID, err)
	}
	if _, err := w.stmt(sqlReleaseLease).ExecContext(w.ctx, time.Now().UnixNano(), l.RunID, l.Token); err != nil {
		return fmt.Errorf("release lease of run %s: %w", l.RunID, err)
	}
	return nil
}

// ReleaseLease gives up a lease still held. See store.Store.
func (d *DB) ReleaseLease(ctx context.Context, l store.Lease) error {
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		if _, err := checkLease(w, l); err != nil {
			return err
		}
		return releaseLease(w, l)
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: release lease: %w", err)
	}
	return nil
}

// LeaseHistory returns every claim of a run in token order. See
// store.Store.
func (d *DB) LeaseHistory(ctx context.Context, runID string) ([]store.LeaseRecord, error) {
	rows, err := d.rd[readLeaseHistory].QueryContext(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: lease history of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.LeaseRecord
	for rows.Next() {
		l := store.LeaseRecord{RunID: runID}
		if err := rows.Scan(&l.Owner, &l.Token, &l.ClaimedAt, &l.Expiry, &l.ReleasedAt); err != nil {
			return nil, fmt.Errorf("sqlite store: lease history of %s: %w", runID, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: lease history of %s: %w", runID, err)
	}
	return out, nil
}
