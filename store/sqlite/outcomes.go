package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// outcomesSQL starts a read of outcomes in outcomeCols order; a WHERE
// clause follows (readSQL).
const outcomesSQL = `SELECT key, kind, function, status, value, error, attempts, seq, waited, idle, wake_order, vtime, deadline, orphaned, updated_at, started_at, settled_at, schema
FROM outcomes WHERE `

// The columns of outcomesSQL.
const (
	colKey = iota
	colKind
	colFunction
	colStatus
	colValue
	colError
	colAttempts
	colSeq
	colWaited
	colIdle
	colWakeOrder
	colVTime
	colDeadline
	colOrphaned
	colUpdatedAt
	colStartedAt
	colSettledAt
	colSchema
	nOutcomeCols
)

// Outcomes returns every outcome of the run: settled ones (Seq > 0) by Seq,
// then pending ones by Key. An unknown run has no outcomes (no error).
func (d *DB) Outcomes(ctx context.Context, runID string) ([]store.Outcome, error) {
	outs, err := d.outcomes(ctx, "outcomes of "+runID, readOutcomes, 32, runID)
	journalOrder(outs)
	return outs, err
}

// journalOrder puts outcomes sorted by Seq into the order of ORDER BY
// seq = 0, seq, key: it sorts each run of equal Seq by Key (bytewise, as
// SQLite's BINARY collation of the key column) and moves the pending ones
// (Seq 0) to the end. SQLite reads outcomes by seq from the outcomes_seq
// index as they are stored; the full ORDER BY made it sort every row of
// the journal, which took about half the time of reading a long one.
func journalOrder(outs []store.Outcome) {
	zero, end := -1, -1 // the pending ones: outs[zero:end]
	for i := 0; i < len(outs); {
		j := i + 1
		for j < len(outs) && outs[j].Seq == outs[i].Seq {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(outs[i:j], func(a, b store.Outcome) int { return strings.Compare(a.Key, b.Key) })
		}
		if outs[i].Seq == 0 {
			zero, end = i, j
		}
		i = j
	}
	if zero >= 0 && end < len(outs) {
		pending := slices.Clone(outs[zero:end])
		copy(outs[zero:], outs[end:])
		copy(outs[len(outs)-len(pending):], pending)
	}
}

// Outcome returns one outcome of a run. See store.Store.
func (d *DB) Outcome(ctx context.Context, runID, key string) (store.Outcome, error) {
	os, err := d.outcomes(ctx, "outcome "+runID+"."+key, readOutcome, 1, runID, key)
	return store.One(os, err, "sqlite store: outcome "+runID+"."+key)
}

// outcomes runs the read q of readSQL (an outcomesSQL) and returns its
// outcomes; capHint is the capacity to start with.
func (d *DB) outcomes(ctx context.Context, what string, q readID, capHint int, args ...any) ([]store.Outcome, error) {
	rows, err := d.rd[q].QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: %s: %w", what, err)
	}
	defer rows.Close()
	var s outcomeScanner
	s.init()
	out := make([]store.Outcome, 0, capHint)
	for rows.Next() {
		if len(out) == cap(out) {
			out = slices.Grow(out, len(out)) // double: a long journal is copied about once in all
		}
		out = out[:len(out)+1]
		if err := s.scan(rows, &out[len(out)-1]); err != nil {
			return nil, fmt.Errorf("sqlite store: %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: %s: %w", what, err)
	}
	if len(out) == 0 {
		return nil, nil // as a read that appends to a nil slice
	}
	return out, nil
}

// slabSize is the size of the buffers outcomeScanner copies blobs into;
// a blob larger than slabSize/8 gets a buffer of its own, so that one
// retained value keeps little else alive.
const slabSize = 8 << 10

// outcomeScanner reads rows of outcomesSQL. It takes each column as the
// driver returns it, so that database/sql converts nothing (it goes
// through reflection, even strconv, for integer columns), and copies the
// blobs into shared buffers instead of allocating each.
type outcomeScanner struct {
	cols          [nOutcomeCols]any
	dest          [nOutcomeCols]any
	value, schema sql.RawBytes
	slab          []byte
}

func (s *outcomeScanner) init() {
	for i := range s.dest {
		s.dest[i] = &s.cols[i]
	}
	s.dest[colValue], s.dest[colSchema] = &s.value, &s.schema
}

// scan reads the current row into o (zero on entry).
func (s *outcomeScanner) scan(rows *sql.Rows, o *store.Outcome) error {
	if err := rows.Scan(s.dest[:]...); err != nil {
		return err
	}
	c := columns{vals: s.cols[:]}
	o.Key = c.text(colKey, "key")
	o.Kind = c.text(colKind, "kind")
	o.Function = c.text(colFunction, "function")
	o.Status = store.OutcomeStatus(c.text(colStatus, "status"))
	o.Value = s.copy(s.value)
	o.Error = c.text(colError, "error")
	o.Attempts = int(c.integer(colAttempts, "attempts"))
	o.Seq = c.integer(colSeq, "seq")
	o.Waited = c.integer(colWaited, "waited") != 0
	o.Idle = c.integer(colIdle, "idle")
	o.WakeOrder = int(c.integer(colWakeOrder, "wake_order"))
	o.VTime = c.integer(colVTime, "vtime")
	o.Deadline = c.integer(colDeadline, "deadline")
	o.Orphaned = c.integer(colOrphaned, "orphaned") != 0
	o.UpdatedAt = time.Unix(0, c.integer(colUpdatedAt, "updated_at"))
	o.StartedAt = c.integer(colStartedAt, "started_at")
	o.SettledAt = c.integer(colSettledAt, "settled_at")
	o.Schema = s.copy(s.schema)
	return c.err
}

// copy returns a copy of b (nil for NULL, as database/sql's own copy),
// capped so that appending to it cannot touch its neighbours.
func (s *outcomeScanner) copy(b sql.RawBytes) []byte {
	switch {
	case b == nil:
		return nil
	case len(b) == 0:
		return []byte{}
	case len(b) > slabSize/8:
		return append([]byte(nil), b...)
	}
	if len(b) > cap(s.slab)-len(s.slab) {
		s.slab = make([]byte, 0, slabSize)
	}
	n := len(s.slab)
	s.slab = append(s.slab, b...)
	return s.slab[n:len(s.slab):len(s.slab)]
}

// columns reads the values of a row scanned into *any, keeping the first
// error.
type columns struct {
	vals []any
	err  error
}

// text returns column i, which must be text.
func (c *columns) text(i int, name string) string {
	switch v := c.vals[i].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	c.fail(i, name, "text")
	return ""
}

// integer returns column i, which must be an integer.
func (c *columns) integer(i int, name string) int64 {
	if v, ok := c.vals[i].(int64); ok {
		return v
	}
	c.fail(i, name, "integer")
	return 0
}

func (c *columns) fail(i int, name, want string) {
	if c.err == nil {
		c.err = fmt.Errorf("column %s: %T is not %s", name, c.vals[i], want)
	}
}
