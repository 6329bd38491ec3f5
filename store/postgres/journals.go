package postgres

import (
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
)

// journalRunsSQL locks the rows of the runs $1 for share and reads their
// status: a batch's outcomes of a final run are refused (store.Batch). The
// lock makes the check hold until the batch commits: a concurrent commit
// that ends one of those runs waits for it, and one that ended a run
// first is seen (a locking read reads the latest committed row). A fenced
// batch needs no such statement: lockLeaseSQL locks its run's row and
// reads its status.
const journalRunsSQL = `SELECT id, status FROM runs WHERE id = ANY($1) ORDER BY id FOR SHARE`

// outcomeRuns returns the runs b writes outcomes of, sorted, once each.
func outcomeRuns(b *store.Batch) []string {
	ids := make([]string, 0, 1)
	for i := range b.Outcomes {
		ids = append(ids, b.Outcomes[i].RunID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// readJournalRuns reads the result of journalRunsSQL: a
// store.JournalClosedError for the first final run.
func readJournalRuns(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("read the status of the batch's runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			return fmt.Errorf("read the status of the batch's runs: %w", err)
		}
		if s := store.RunStatus(st); s.Final() {
			return store.JournalClosedError(id, s)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the status of the batch's runs: %w", err)
	}
	return nil
}
