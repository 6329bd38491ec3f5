package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Every statement a run's life takes (create, claim, drive, commit,
// release) and every read the host makes per run is prepared once at
// Open: SQLite then parses and plans it once per connection, not at each
// call.

// sqlID names a statement of namedSQL (the writer's).
type sqlID int

// The statements of namedSQL, prepared once on the write connection.
const (
	sqlQueueTask sqlID = iota
	sqlClaimTasks
	sqlMoveClock
	sqlTaskRow
	sqlHeartbeat
	sqlRetryTask
	sqlEndTask
	sqlCancelTasks
	sqlInsertSettlement
	sqlUpsertAttempt
	sqlInsertRun
	sqlRunRow
	sqlUpdateRun
	sqlUpdateRunStatus
	sqlWaiting
	sqlCheckLease
	sqlRunStatus
	sqlClaimDue
	sqlClaimRun
	sqlRecordLease
	sqlRenewRun
	sqlRenewLease
	sqlReleaseRun
	sqlReleaseLease
	sqlOutcomeState
	sqlSettle
	sqlRequestCancel
	sqlBegin
	sqlCommit
	sqlRollback
	sqlSavepoint
	sqlRollbackTo
	sqlRelease
	nNamedSQL
)

// namedSQL are statements the writer runs often (tasks.go, write.go,
// lease.go, writer.go): preparing one costs more than running it. They
// are prepared on the writer's connection (raw.go).
var namedSQL = [nNamedSQL]string{
	sqlQueueTask:        queueTaskSQL,
	sqlClaimTasks:       claimTasksSQL,
	sqlMoveClock:        moveClockSQL,
	sqlTaskRow:          taskRowSQL,
	sqlHeartbeat:        heartbeatSQL,
	sqlRetryTask:        retryTaskSQL,
	sqlEndTask:          endTaskSQL,
	sqlCancelTasks:      cancelTasksSQL,
	sqlInsertSettlement: insertSettlementSQL,
	sqlUpsertAttempt:    upsertAttemptSQL,
	sqlInsertRun:        insertRunSQL,
	sqlRunRow:           runRowSQL,
	sqlUpdateRun:        updateRunSQL,
	sqlUpdateRunStatus:  updateRunStatusSQL,
	sqlWaiting:          waitingSQL,
	sqlCheckLease:       checkLeaseSQL,
	sqlRunStatus:        runStatusSQL,
	sqlClaimDue:         claimDueSQL,
	sqlClaimRun:         claimRunSQL,
	sqlRecordLease:      recordLeaseSQL,
	sqlRenewRun:         renewRunSQL,
	sqlRenewLease:       renewLeaseSQL,
	sqlReleaseRun:       releaseRunSQL,
	sqlReleaseLease:     releaseLeaseSQL,
	sqlOutcomeState:     outcomeStateSQL,
	sqlSettle:           settleSQL,
	sqlRequestCancel:    requestCancelSQL,
	// The writer's transactions (writer.go): its connection has the
	// _txlock of Open, immediate.
	sqlBegin:      "BEGIN IMMEDIATE",
	sqlCommit:     "COMMIT",
	sqlRollback:   "ROLLBACK",
	sqlSavepoint:  "SAVEPOINT b",
	sqlRollbackTo: "ROLLBACK TO b",
	sqlRelease:    "RELEASE b",
}

// readID names a statement of readSQL.
type readID int

// The statements of readSQL, prepared once on the read pool.
const (
	readRun readID = iota
	readDue
	readOutcomes
	readOutcome
	readSettlements
	readAttempts
	readTasks
	readTask
	readExpiredTasks
	readLeaseHistory
	readClaimable
	readModuleInfo
	readKeyByDigest
	readAnyKey
	nReadSQL
)

// readSQL are the reads made for every run (read.go, attempts.go,
// tasks.go, lease.go), polled by workers, or made for every request.
var readSQL = [nReadSQL]string{
	readRun:          runRowSQL,
	readDue:          dueSQL(""),
	readOutcomes:     outcomesSQL + `run_id = ? ORDER BY seq`, // then journalOrder
	readOutcome:      outcomesSQL + `run_id = ? AND key = ?`,
	readSettlements:  settlementsSQL,
	readAttempts:     attemptsSQL,
	readTasks:        tasksSQL + `run_id = ? ORDER BY seq`,
	readTask:         tasksSQL + `run_id = ? AND key = ?`,
	readExpiredTasks: tasksSQL + `state = 'claimed' AND expiry <= ? ORDER BY expiry, seq LIMIT ?`,
	readLeaseHistory: leaseHistorySQL,
	readClaimable:    claimableSQL,
	readModuleInfo:   moduleInfoSQL,
	readKeyByDigest:  rowscan.KeyByDigest, // every request that sends a key (keys.go)
	readAnyKey:       rowscan.KeyAny,      // every request to a server without a token
}

// reads are the statements of readSQL prepared on the read pool:
// database/sql prepares each on a connection the first time it runs
// there and keeps it for that connection.
type reads [nReadSQL]*sql.Stmt

func (r *reads) prepare(ctx context.Context, db *sql.DB) error {
	var err error
	for i, q := range readSQL {
		if r[i], err = db.PrepareContext(ctx, q); err != nil {
			return fmt.Errorf("prepare %.40q: %w", q, err)
		}
	}
	return nil
}

func (r *reads) close() error {
	var errs []error
	for _, st := range r {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// runRowSQL reads one run in rowscan.Run's order.
const runRowSQL = `SELECT ` + runColumns + ` FROM runs WHERE id = ?`

// tasksSQL starts a read of tasks in rowscan.Task's order; a WHERE clause
// follows.
const tasksSQL = `SELECT ` + rowscan.TaskColumns + ` FROM tasks WHERE `
