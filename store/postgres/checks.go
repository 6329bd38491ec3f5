package postgres

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/skeinrun/skein/store"
)

// A commit is one pipeline that PostgreSQL runs as one implicit
// transaction (no BEGIN, no COMMIT: one round trip), so no check can
// wait for Go to read a result and roll back. Each check is made by a
// statement of the pipeline that calls skein_fail (schema migration 19)
// when it fails: the error aborts the transaction, and Go reads which
// check failed from the error (raisedCheck) to return the same error as
// a check made in Go would.

// checkState is the SQLSTATE skein_fail raises (class SK: skein's own).
const checkState = "SKC01"

// The codes of the checks: skein_fail's first argument.
const (
	checkLeaseLost      = "lease_lost"      // a fenced batch's lease is not the run's current one
	checkJournalClosed  = "journal_closed"  // outcomes of a final run (the hint is its status)
	checkCreateConflict = "create_conflict" // a created run exists
	checkRunNotFound    = "run_not_found"   // an updated run does not exist
	checkReleaseLost    = "release_lost"    // a released lease is not the run's current one
)

// raisedCheck reports the code and subject (and extra) of the check that
// err is the failure of, if it is one.
func raisedCheck(err error) (code, subject, extra string, ok bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != checkState {
		return "", "", "", false
	}
	return pe.Message, pe.Detail, pe.Hint, true
}

// finalStatuses is the SQL list of the final statuses
// (store.RunStatus.Final).
var finalStatuses = "('" + strings.Join([]string{string(store.RunCompleted), string(store.RunCanceled),
	string(store.RunContinued), string(store.RunReset)}, "', '") + "')"

// fenceSQL locks the row of run $1 if its lease is still owner $2 with
// token $3 and fails the commit otherwise (checkLeaseLost), or when $4
// (the batch writes outcomes) and the run is final
// (checkJournalClosed). Commit sends it first in a fenced batch: the
// lock holds until the transaction ends, so no claim, renewal or release
// of the run can slip in between the check and the writes. (The CTE is
// materialized: it is evaluated once, and the lock is taken whatever the
// outer query does.)
var fenceSQL = `WITH f AS MATERIALIZED (SELECT status FROM runs
	WHERE id = $1 AND lease_owner <> '' AND lease_owner = $2 AND lease_token = $3 FOR NO KEY UPDATE)
SELECT CASE WHEN f.status IS NULL THEN skein_fail('` + checkLeaseLost + `', $1)
	WHEN $4 AND f.status IN ` + finalStatuses + ` THEN skein_fail('` + checkJournalClosed + `', $1, f.status) END
FROM (SELECT 1) one LEFT JOIN f ON true`

// journalRunsSQL locks the rows of the runs $1 for share, in id order,
// and fails the commit on the first that is final (checkJournalClosed):
// a batch's outcomes of a final run are refused (store.Batch). The lock
// makes the check hold until the batch commits: a concurrent commit that
// ends one of those runs waits for it, and one that ended a run first is
// seen (a locking read reads the latest committed row). A fenced batch
// needs no such statement: fenceSQL locks its run's row and checks its
// status. (The CTE is materialized so that the outer filter is not
// pushed into it: every row is locked.)
var journalRunsSQL = `WITH r AS MATERIALIZED (SELECT id, status FROM runs WHERE id = ANY($1) ORDER BY id FOR SHARE)
SELECT skein_fail('` + checkJournalClosed + `', r.id, r.status) FROM r WHERE r.status IN ` + finalStatuses

// createRunSQL inserts a run (insertRunSQL's parameters) and fails the
// commit when one exists with its id (checkCreateConflict).
var createRunSQL = `WITH i AS (` + insertRunSQL + ` RETURNING 1)
SELECT skein_fail('` + checkCreateConflict + `', $1) WHERE NOT EXISTS (SELECT 1 FROM i)`

// updateRunSQL writes every mutable field of run $7 and fails the commit
// when there is no such run (checkRunNotFound).
const updateRunSQL = `WITH u AS (UPDATE runs SET module_hash = $1, status = $2, result = $3, error = $4, wake_at = $5, updated_at = $6 WHERE id = $7 RETURNING 1)
SELECT skein_fail('` + checkRunNotFound + `', $7) WHERE NOT EXISTS (SELECT 1 FROM u)`

// releaseCheckedSQL is releaseLeaseSQL failing the commit when the lease
// is not the run's current one (checkReleaseLost). The fence's lock
// holds the run's row, so it fails only if the batch itself changed it.
const releaseCheckedSQL = `WITH r AS (
	UPDATE runs SET lease_owner = '', lease_expiry = 0
	WHERE id = $1 AND lease_owner <> '' AND lease_owner = $2 AND lease_token = $3
	RETURNING id
), l AS (
	UPDATE leases SET released_at = $4 FROM r WHERE leases.run_id = r.id AND leases.token = $3 RETURNING 1
)
SELECT skein_fail('` + checkReleaseLost + `', $1) WHERE NOT EXISTS (SELECT 1 FROM l)`

// fenceError is the error of fenceSQL's result err for a batch fenced by
// l: store.ErrLeaseLost or a store.JournalClosedError for the checks.
func fenceError(err error, l store.Lease) error {
	switch code, id, st, _ := raisedCheck(err); code {
	case checkLeaseLost:
		return l.LostError()
	case checkJournalClosed:
		return store.JournalClosedError(id, store.RunStatus(st))
	}
	return err
}

// journalError is the error of journalRunsSQL's result err.
func journalError(err error) error {
	if code, id, st, _ := raisedCheck(err); code == checkJournalClosed {
		return store.JournalClosedError(id, store.RunStatus(st))
	}
	return fmt.Errorf("read the status of the batch's runs: %w", err)
}
