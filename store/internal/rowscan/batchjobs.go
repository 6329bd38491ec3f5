package rowscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// BatchJobColumns are the columns of batch_jobs that BatchJob reads, in
// order.
const BatchJobColumns = `id, status, cancel, created_at, lease_owner, lease_expiry, lease_token, doc`

// batchDoc is what the doc column of batch_jobs holds: the job but for
// its columns.
type batchDoc struct {
	Where     string             `json:"where"`
	Filter    string             `json:"filter"`
	Action    string             `json:"action"`
	Args      json.RawMessage    `json:"args,omitempty"`
	Rate      float64            `json:"rate"`
	Before    int64              `json:"before"`
	Cursor    string             `json:"cursor,omitempty"`
	Selected  int64              `json:"selected"`
	Done      int64              `json:"done"`
	Failed    int64              `json:"failed"`
	Errors    []store.BatchError `json:"errors,omitempty"`
	StartedAt int64              `json:"started_at,omitempty"`
	ActedAt   int64              `json:"acted_at,omitempty"`
	EndedAt   int64              `json:"ended_at,omitempty"`
}

// BatchDoc is j's doc column.
func BatchDoc(j store.BatchJob) (string, error) {
	var args json.RawMessage
	if len(j.Args) > 0 {
		if !json.Valid(j.Args) {
			return "", fmt.Errorf("batch %s: the arguments are not JSON", j.ID)
		}
		args = j.Args
	}
	b, err := json.Marshal(batchDoc{Where: j.Where, Filter: j.Filter, Action: j.Action, Args: args, Rate: j.Rate,
		Before: j.Before, Cursor: j.Cursor, Selected: j.Selected, Done: j.Done, Failed: j.Failed, Errors: j.Errors,
		StartedAt: j.StartedAt, ActedAt: j.ActedAt, EndedAt: j.EndedAt})
	return string(b), err
}

// BatchJob reads a row of BatchJobColumns. A missing row (an error that
// is noRows) is store.ErrNotFound.
func BatchJob(s Scanner, noRows error) (store.BatchJob, error) {
	var j store.BatchJob
	var status, doc string
	var created int64
	err := s.Scan(&j.ID, &status, &j.Cancel, &created, &j.LeaseOwner, &j.LeaseExpiry, &j.LeaseToken, &doc)
	if errors.Is(err, noRows) {
		return store.BatchJob{}, store.ErrNotFound
	}
	if err != nil {
		return store.BatchJob{}, err
	}
	var d batchDoc
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		return store.BatchJob{}, fmt.Errorf("batch %s: decode: %w", j.ID, err)
	}
	j.Status, j.CreatedAt = store.BatchJobStatus(status), time.Unix(0, created)
	j.Where, j.Filter, j.Action, j.Rate, j.Before = d.Where, d.Filter, d.Action, d.Rate, d.Before
	if len(d.Args) > 0 {
		j.Args = []byte(d.Args)
	}
	j.Cursor, j.Selected, j.Done, j.Failed, j.Errors = d.Cursor, d.Selected, d.Done, d.Failed, d.Errors
	j.StartedAt, j.ActedAt, j.EndedAt = d.StartedAt, d.ActedAt, d.EndedAt
	return j, nil
}

// The statements of store.BatchJobStore, in SQLite's ?N markers
// (Postgres rewrites them, Dollars).
const (
	BatchInsert = `INSERT INTO batch_jobs (id, status, cancel, created_at, doc) VALUES (?1, 'running', '', ?2, ?3) ON CONFLICT (id) DO NOTHING`
	BatchSelect = `SELECT ` + BatchJobColumns + ` FROM batch_jobs WHERE id = ?1`
	BatchList   = `SELECT ` + BatchJobColumns + ` FROM batch_jobs ORDER BY created_at DESC, id DESC LIMIT ?1`
	BatchCancel = `UPDATE batch_jobs SET cancel = ?2 WHERE id = ?1 AND status = 'running' AND cancel = ''`
	// BatchClaim claims the oldest running job with a free or expired
	// lease (?1 now, ?2 owner, ?3 expiry). The outer conditions are
	// checked again on the row a concurrent claim may have changed
	// (Postgres), so two claims never both take it.
	BatchClaim = `UPDATE batch_jobs SET lease_owner = ?2, lease_expiry = CAST(?3 AS BIGINT), lease_token = lease_token + 1
WHERE id = (SELECT id FROM batch_jobs WHERE status = 'running' AND (lease_owner = '' OR lease_expiry <= ?1)
	ORDER BY created_at, id LIMIT 1) AND status = 'running' AND (lease_owner = '' OR lease_expiry <= ?1)
RETURNING ` + BatchJobColumns
	// BatchSave writes a job's progress under its lease (?1 id, ?2 owner,
	// ?3 token, ?4 status, ?5 doc, ?6 expiry); an ended job's lease is
	// released.
	BatchSave = `UPDATE batch_jobs SET status = ?4, doc = ?5,
	lease_owner = CASE WHEN ?4 = 'running' THEN lease_owner ELSE '' END,
	lease_expiry = CASE WHEN ?4 = 'running' THEN CAST(?6 AS BIGINT) ELSE 0 END
WHERE id = ?1 AND lease_owner = ?2 AND lease_owner <> '' AND lease_token = ?3
RETURNING ` + BatchJobColumns
)

// Dollars is q with SQLite's ?N markers written as Postgres's $N.
func Dollars(q string) string {
	b := []byte(q)
	for i := range b {
		if b[i] == '?' {
			b[i] = '$'
		}
	}
	return string(b)
}
