package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/internal/rowscan"
)

// Commit applies b in one transaction and returns once it is committed.
// The batch's statements are one pipeline that PostgreSQL runs as one
// implicit transaction: one round trip, no BEGIN and no COMMIT (see
// checks.go for how its checks abort it). An outcome, settlement or task
// of an unknown run fails the batch (foreign key), as does an update of
// an unknown run (wrapping store.ErrNotFound); a failed batch leaves no
// trace. A zero UpdatedAt (on an outcome or a run) or CreatedAt (on a
// settlement) is stored as now. A ctx that has ended fails the commit
// with its error before anything is written. A fenced batch's pipeline
// starts with a statement that locks its run's row and checks the lease
// (see fenceSQL); a lost lease rolls the batch back. An unfenced one with
// outcomes starts with journalRunsSQL. Either refuses outcomes of a final
// run (store.JournalClosedError). The writer goroutine commits b with
// the batches of other Commit calls waiting at the same time (group.go):
// ctx counts only while b waits, and a batch that fails fails alone.
func (d *DB) Commit(ctx context.Context, b store.Batch) error {
	if err := b.CheckTexts(); err != nil {
		return fmt.Errorf("postgres store: commit: %w", err)
	}
	if emptyBatch(&b) {
		if d.closed.Load() {
			return fmt.Errorf("postgres store: commit: %w", ErrClosed)
		}
		return nil
	}
	if err := b.CheckFenceWrites(); err != nil {
		return fmt.Errorf("postgres store: commit: %w", err)
	}
	for i := range b.Creates {
		if b.Creates[i].ID == "" {
			return errors.New("postgres store: commit: create run: empty id")
		}
	}
	if err := d.enqueue(ctx, &b); err != nil {
		return fmt.Errorf("postgres store: commit: %w", err)
	}
	return nil
}

// emptyBatch reports whether b writes nothing and checks nothing.
func emptyBatch(b *store.Batch) bool {
	return len(b.Creates) == 0 && len(b.Outcomes) == 0 && len(b.Runs) == 0 && len(b.Settlements) == 0 && len(b.Tasks) == 0 &&
		len(b.Attempts) == 0 && len(b.ParentEnded) == 0 && len(b.Attrs) == 0 && b.Fence == nil
}

// commitTx applies b (checked by Commit) inside tx: the same pipeline as
// Commit's, in a transaction the caller holds (ResetRun).
func commitTx(ctx context.Context, tx pgx.Tx, b *store.Batch) error {
	var pb pgx.Batch
	q := queueBatch(&pb, b, time.Now().UnixNano())
	return sendBatch(tx.SendBatch(ctx, &pb), &q)
}

// sendBatch reads the results of q from br and closes it.
func sendBatch(br pgx.BatchResults, q *queued) error {
	err := readBatch(br, q)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// queued is a batch whose statements queueBatch queued: what readBatch
// needs to read their results.
type queued struct {
	b       *store.Batch
	nAttrs  int          // attribute writes
	touched []touchedRun // runs whose waiting flag is computed again
	n       int          // statements
}

// queueBatch queues the statements of b (checked by Commit) on pb, now
// being the time of the commit.
func queueBatch(pb *pgx.Batch, b *store.Batch, now int64) queued {
	start := pb.Len()
	if f := b.Fence; f != nil {
		pb.Queue(fenceSQL, f.RunID, f.Owner, f.Token, len(b.Outcomes) > 0)
	} else if len(b.Outcomes) > 0 {
		pb.Queue(journalRunsSQL, outcomeRuns(b))
	}
	for i := range b.Creates {
		r := b.Creates[i].ForCreate(time.Unix(0, now))
		pb.Queue(createRunSQL, insertRunArgs(&r)...)
	}
	for i := range b.Outcomes {
		ro := &b.Outcomes[i]
		o := &ro.Outcome
		pb.Queue(upsertOutcomeSQL, ro.RunID, o.Key, o.Kind, o.Function, string(o.Status), o.Value, o.Error,
			int64(o.Attempts), o.Seq, o.Waited, o.Idle, int64(o.WakeOrder), o.VTime, o.Deadline, o.Orphaned,
			nanosOr(o.UpdatedAt, now), o.StartedAt, o.SettledAt, rowscan.NullBytes(o.Schema))
	}
	for i := range b.Runs {
		r := &b.Runs[i]
		pb.Queue(updateRunSQL, r.ModuleHash, string(r.Status), r.Result, r.Error, r.WakeAt, nanosOr(r.UpdatedAt, now), r.ID)
	}
	for i := range b.Settlements {
		st := &b.Settlements[i]
		pb.Queue(insertSettlementSQL, st.RunID, st.Key, string(st.Status), st.Value, st.Error, int64(st.Attempts), nanosOr(st.CreatedAt, now))
	}
	queueTasks(pb, b.Tasks, now)
	queueAttempts(pb, b.Attempts)
	queueParentEnded(pb, b.ParentEnded, now)
	q := queued{b: b, nAttrs: queueBatchAttrs(pb, b), touched: touchedRuns(b)}
	if b.Release {
		f := b.Fence
		pb.Queue(releaseCheckedSQL, f.RunID, f.Owner, f.Token, now)
	}
	for _, t := range q.touched {
		if t.settled {
			pb.Queue(lockRunSQL, t.id)
		}
		pb.Queue(waitingSQL, t.id)
	}
	q.n = pb.Len() - start
	return q
}

// readBatch reads the results of the statements queueBatch queued for
// q, turning the failure of a check into its store error.
func readBatch(br pgx.BatchResults, q *queued) error {
	b := q.b
	if f := b.Fence; f != nil {
		if _, err := br.Exec(); err != nil {
			return fenceError(err, *f)
		}
	} else if len(b.Outcomes) > 0 {
		if _, err := br.Exec(); err != nil {
			return journalError(err)
		}
	}
	for i := range b.Creates {
		if _, err := br.Exec(); err != nil {
			if code, _, _, _ := raisedCheck(err); code == checkCreateConflict {
				return store.CreateConflictError(b.Creates[i].ID)
			}
			return fmt.Errorf("create run %s: %w", b.Creates[i].ID, err)
		}
	}
	for i := range b.Outcomes {
		if _, err := br.Exec(); err != nil {
			ro := &b.Outcomes[i]
			return fmt.Errorf("upsert outcome %s/%s: %w", ro.RunID, ro.Outcome.Key, err)
		}
	}
	for i := range b.Runs {
		if _, err := br.Exec(); err != nil {
			if code, _, _, _ := raisedCheck(err); code == checkRunNotFound {
				err = store.ErrNotFound
			}
			return fmt.Errorf("update run %s: %w", b.Runs[i].ID, err)
		}
	}
	for i := range b.Settlements {
		if _, err := br.Exec(); err != nil {
			st := &b.Settlements[i]
			return fmt.Errorf("settlement %s/%s: %w", st.RunID, st.Key, err)
		}
	}
	for i := range b.Tasks {
		if _, err := br.Exec(); err != nil {
			t := &b.Tasks[i]
			return fmt.Errorf("queue task %s.%s: %w", t.RunID, t.Key, err)
		}
	}
	if err := readAttempts(br, b.Attempts); err != nil {
		return err
	}
	for i := range b.ParentEnded {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("parent ended: child run %s: %w", b.ParentEnded[i].RunID, err)
		}
	}
	if err := readAttrs(br, q.nAttrs); err != nil {
		return err
	}
	return readTail(br, q)
}

// readTail reads the results of the release and the waiting flags that
// end q's statements.
func readTail(br pgx.BatchResults, q *queued) error {
	if f := q.b.Fence; q.b.Release {
		if _, err := br.Exec(); err != nil {
			if code, _, _, _ := raisedCheck(err); code == checkReleaseLost {
				err = f.LostError()
			}
			return fmt.Errorf("release lease of run %s: %w", f.RunID, err)
		}
	}
	for _, t := range q.touched {
		if t.settled {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("lock run %s: %w", t.id, err)
			}
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("update run %s: waiting: %w", t.id, err)
		}
	}
	return nil
}

// outcomeRuns returns the runs b writes outcomes of, sorted, once each.
func outcomeRuns(b *store.Batch) []string {
	ids := make([]string, 0, 1)
	for i := range b.Outcomes {
		ids = append(ids, b.Outcomes[i].RunID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// touchedRun is a run a batch writes to, and whether it writes a
// settlement for it.
type touchedRun struct {
	id      string
	settled bool
}

// touchedRuns returns the runs b writes outcomes, updates or settlements
// of, by id, once each: after the batch, what waits for each of them is
// computed again (waitingSQL; after lockRunSQL for a run given a
// settlement).
func touchedRuns(b *store.Batch) []touchedRun {
	ts := make([]touchedRun, 0, len(b.Runs)+len(b.Settlements)+1)
	for i := range b.Outcomes {
		ts = append(ts, touchedRun{id: b.Outcomes[i].RunID})
	}
	for i := range b.Runs {
		ts = append(ts, touchedRun{id: b.Runs[i].ID})
	}
	for i := range b.Settlements {
		ts = append(ts, touchedRun{id: b.Settlements[i].RunID, settled: true})
	}
	for i := range b.ParentEnded {
		ts = append(ts, touchedRun{id: b.ParentEnded[i].RunID})
	}
	// By id, a settled entry first, then one entry per id.
	slices.SortFunc(ts, func(a, b touchedRun) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return cmpBool(b.settled, a.settled)
	})
	return slices.CompactFunc(ts, func(a, b touchedRun) bool { return a.id == b.id })
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
