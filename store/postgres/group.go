package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/skeinrun/skein/store"
)

// maxGroup is the most batches one group commit sends in one pipeline.
const maxGroup = 64

// commitReq is one Commit waiting for the writer: its batch, and where
// its answer goes.
type commitReq struct {
	b     *store.Batch
	taken bool       // the writer has taken it up (under writer.mu)
	done  chan error // buffered; receives exactly one answer
}

// writer is the goroutine that commits the batches of Commit in groups:
// it takes every batch waiting (up to maxGroup) and sends them in one
// pipeline, one implicit transaction and one round trip. A lone batch
// is sent at once: nothing waits for a timer.
type writer struct {
	mu     sync.Mutex
	queue  []*commitReq
	taken  int // batches taken up so far
	closed bool
	wake   chan struct{} // capacity 1: the queue changed or Close was called
	done   chan struct{} // closed when the goroutine returns
}

// startWriter starts d's writer goroutine; stopWriter stops it.
func (d *DB) startWriter() {
	d.w = &writer{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go d.writeLoop()
}

// stopWriter fails the batches still waiting with ErrClosed, lets the
// group in flight finish and waits for the writer goroutine to return.
func (d *DB) stopWriter() {
	w := d.w
	w.mu.Lock()
	w.closed = true
	for _, r := range w.queue {
		r.taken = true
		r.done <- ErrClosed
	}
	w.queue = nil
	w.mu.Unlock()
	w.signal()
	<-w.done
}

func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// enqueue hands b to the writer and waits for its answer. ctx counts
// only while b waits: if it ends then, b is dropped and ctx's error
// returned; once taken up, b is committed or fails regardless of ctx.
func (d *DB) enqueue(ctx context.Context, b *store.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := d.w
	r := &commitReq{b: b, done: make(chan error, 1)}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	w.signal()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
	}
	w.mu.Lock()
	if !r.taken {
		i := slices.Index(w.queue, r)
		w.queue = slices.Delete(w.queue, i, i+1)
		w.mu.Unlock()
		return ctx.Err()
	}
	w.mu.Unlock()
	return <-r.done
}

// writeLoop is the writer goroutine: it commits what waits, a group at a
// time, until Close.
func (d *DB) writeLoop() {
	w := d.w
	defer close(w.done)
	group := make([]*commitReq, 0, maxGroup)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.mu.Unlock()
			<-w.wake
			w.mu.Lock()
		}
		if w.closed {
			w.mu.Unlock()
			return
		}
		n := min(len(w.queue), maxGroup)
		group = append(group[:0], w.queue[:n]...)
		w.queue = slices.Delete(w.queue, 0, n)
		for _, r := range group {
			r.taken = true
		}
		w.taken += n
		w.mu.Unlock()
		d.commitGroup(group)
		clear(group)
	}
}

// commitGroup commits the batches of group in one pipeline and answers
// each. They are sorted by their fenced run, so that concurrent groups
// lock the rows of runs in one order. A batch that fails for itself (a
// check, a foreign key, a write-once row) fails alone, with the error it
// would get alone, and the others are sent again; a deadlock or a
// serialization failure sends the group again (maxTxAttempts times); a
// lost connection or a full disk fails them all; any other failure of
// the group commits each batch alone.
func (d *DB) commitGroup(group []*commitReq) {
	slices.SortStableFunc(group, func(a, b *commitReq) int { return cmp.Compare(fencedRun(a.b), fencedRun(b.b)) })
	live := slices.Clone(group)
	var err error
	for attempts := 0; len(live) > 0; {
		var failed int
		failed, err = d.sendGroup(live)
		switch {
		case err == nil:
			for _, r := range live {
				r.done <- nil
			}
			return
		case failed >= 0:
			live[failed].done <- d.wrapClosed(err)
			live = slices.Delete(live, failed, failed+1)
			continue
		case retryable(err):
			if attempts++; attempts < maxTxAttempts {
				continue
			}
		case !groupWide(err):
			for _, r := range live {
				r.done <- d.commitAlone(r.b)
			}
			return
		}
		for _, r := range live {
			r.done <- d.wrapClosed(err)
		}
		return
	}
}

// groupWide reports whether err, a failure of a whole group, is one each
// of its batches would meet alone: a lost connection, a full disk, a
// closed pool.
func groupWide(err error) bool {
	var pe *pgconn.PgError
	return unreachable(err) || errors.Is(err, ErrClosed) || (errors.As(err, &pe) && pe.Code == diskFullState)
}

// fencedRun is the run whose lease b is fenced by ("" if none).
func fencedRun(b *store.Batch) string {
	if b.Fence == nil {
		return ""
	}
	return b.Fence.RunID
}

// sendGroup sends the batches of group in one pipeline. A batch that
// fails for itself is reported by its index and error (the others are
// rolled back with it); a failure of the group as such (a deadlock, a
// lost connection, a failure at commit) has index -1.
func (d *DB) sendGroup(group []*commitReq) (int, error) {
	var pb pgx.Batch
	now := time.Now().UnixNano()
	qs := make([]queued, len(group))
	for i, r := range group {
		qs[i] = queueBatch(&pb, r.b, now)
	}
	br := &recordingResults{BatchResults: d.pool.SendBatch(context.Background(), &pb)}
	failed := -1
	var err error
	for i := range qs {
		if err = readBatch(br, &qs[i]); err != nil {
			failed = i
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	var pe *pgconn.PgError
	if failed >= 0 && (!errors.As(br.err, &pe) || retryable(br.err) || groupWide(br.err)) {
		// Not the batch's own failure: the group's.
		failed, err = -1, br.err
	}
	return failed, err
}

// commitAlone commits b in a pipeline of its own (inStmt's retries).
func (d *DB) commitAlone(b *store.Batch) error {
	return d.inStmt(context.Background(), func() error {
		var pb pgx.Batch
		q := queueBatch(&pb, b, time.Now().UnixNano())
		return sendBatch(d.pool.SendBatch(context.Background(), &pb), &q)
	})
}

// recordingResults keeps the error of the last statement whose result
// failed: the database's own error, before readBatch turns it into a
// store error.
type recordingResults struct {
	pgx.BatchResults
	err error
}

func (r *recordingResults) Exec() (pgconn.CommandTag, error) {
	tag, err := r.BatchResults.Exec()
	if err != nil {
		r.err = err
	}
	return tag, err
}
