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

// checkJournalsOpen fails with store.JournalClosedError (wrapped
// ErrImmutable) if b writes an outcome of a final run (see store.Batch).
// A run's status is the one set by a batch applied before b in the same
// transaction (ended), else the stored one: fenced, the status checkFence
// read, for the fenced run (a fenced batch writes outcomes of that run
// only, so it costs no read), else read here.
func checkJournalsOpen(w *wtx, b *store.Batch, fenced store.RunStatus, ended map[string]store.RunStatus) error {
	var checked []string
	for i := range b.Outcomes {
		id := b.Outcomes[i].RunID
		if slices.Contains(checked, id) {
			continue
		}
		checked = append(checked, id)
		st, ok := ended[id]
		switch {
		case ok:
		case b.Fence != nil && id == b.Fence.RunID:
			st = fenced
		default:
			var err error
			if st, err = runStatus(w, id); err != nil {
				return err
			}
		}
		if st.Final() {
			return store.JournalClosedError(id, st)
		}
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
