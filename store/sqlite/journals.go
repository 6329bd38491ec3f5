package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/skeinrun/skein/store"
)

// runStatusSQL reads the status of one run.
const runStatusSQL = `SELECT status FROM runs WHERE id = ?`

// checkBatch checks b inside the writer's transaction before it is
// applied: its fence (checkFence), and that it writes no outcome of a
// final run (store.JournalClosedError, wrapping ErrImmutable; see
// store.Batch). A run's status is the one set by a batch applied before b
// in the same transaction (ended), else the stored one: for a fenced
// batch, whose outcomes are all of the fenced run, the status the fence's
// check read; else read here, once per run.
func checkBatch(w *wtx, b *store.Batch, ended map[string]store.RunStatus) error {
	fenced, err := checkFence(w, b)
	if err != nil || len(b.Outcomes) == 0 {
		return err
	}
	if f := b.Fence; f != nil {
		return closedJournal(f.RunID, fenced, ended)
	}
	var checked []string
	for i := range b.Outcomes {
		id := b.Outcomes[i].RunID
		if slices.Contains(checked, id) {
			continue
		}
		checked = append(checked, id)
		st, err := runStatus(w, id)
		if err != nil {
			return err
		}
		if err := closedJournal(id, st, ended); err != nil {
			return err
		}
	}
	return nil
}

// closedJournal is store.JournalClosedError if run id is final: by ended,
// else by its stored status st.
func closedJournal(id string, st store.RunStatus, ended map[string]store.RunStatus) error {
	if e, ok := ended[id]; ok {
		st = e
	}
	if st.Final() {
		return store.JournalClosedError(id, st)
	}
	return nil
}

// runStatus returns the stored status of run id; "" if there is no such
// run (a run the batch creates, or an unknown one, which the outcome's
// foreign key refuses).
func runStatus(w *wtx, id string) (store.RunStatus, error) {
	var st string
	err := w.stmt(sqlRunStatus).QueryRowContext(w.ctx, id).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read status of run %s: %w", id, err)
	}
	return store.RunStatus(st), nil
}

// noteEnded adds to ended the runs b makes final, for the checks of the
// batches applied after it in the same transaction; it returns ended,
// made if it was nil and needed.
func noteEnded(ended map[string]store.RunStatus, b *store.Batch) map[string]store.RunStatus {
	for i := range b.Runs {
		if r := &b.Runs[i]; r.Status.Final() {
			if ended == nil {
				ended = map[string]store.RunStatus{}
			}
			ended[r.ID] = r.Status
		}
	}
	return ended
}
