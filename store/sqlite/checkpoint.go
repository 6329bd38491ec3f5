package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"sync/atomic"
	"time"
)

// Checkpoints. In WAL mode SQLite appends commits to the write-ahead log
// and later copies them back into the database file: a checkpoint, which
// also syncs the file. By default the connection that commits runs one,
// inside its commit, whenever the log has passed 1,000 pages, so every so
// often one commit waits for a checkpoint: measured, that doubled the p99
// of a run's activation (3.0–3.5 → 6.5–6.9 ms). So the writer's automatic
// checkpoint is only a safety net (walSafetyPages), a checkpointer
// goroutine with a connection of its own runs PASSIVE checkpoints, which
// wait for no reader or writer, shortly after commits, and the writer
// checkpoints what is left when it has nothing queued. The log starts
// again from its beginning only after a checkpoint that copied all of
// it, which the checkpointer cannot do while commits go on; the
// writer's, with no commit in between, can, and costs little because the
// checkpointer has copied most pages already. So the log stays small and
// no commit that a caller waits for runs a large checkpoint.

// walSafetyPages is the writer's own automatic checkpoint: the log's
// size, in pages, past which a commit checkpoints itself (the
// checkpointer fell behind).
const walSafetyPages = 16384

// writerCheckpointPages is the log's size, in pages, as the
// checkpointer last saw it, from which the writer checkpoints when it has
// nothing queued: a few in a thousand commits wait for one, and the log
// stays within about 16 MiB plus what is committed between two of the
// checkpointer's runs, never past walSafetyPages (64 MiB).
const writerCheckpointPages = 4096

// checkpointEvery is the least time between two checkpoints: commits
// that come faster share one.
const checkpointEvery = 50 * time.Millisecond

// checkpointer runs the database's checkpoints off the commit path.
type checkpointer struct {
	db   *sql.DB
	log  *slog.Logger
	kick chan struct{} // a commit happened
	// logPages is the log's size in pages at the last checkpoint, for
	// the writer (afterCommit).
	logPages atomic.Int64
	stop     chan struct{}
	done     chan struct{}
}

// startCheckpointer opens the checkpointer's connection to the database
// at path and starts its goroutine.
func startCheckpointer(ctx context.Context, path string, log *slog.Logger) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn(path, url.Values{
		"_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS)},
	}))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close() // the ping's error is the one to return
		return nil, err
	}
	c := &checkpointer{db: db, log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

// committed tells the checkpointer that a commit happened; it never
// blocks.
func (c *checkpointer) committed() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// loop checkpoints after commits, at most once per checkpointEvery,
// until close.
func (c *checkpointer) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		c.checkpoint()
		select {
		case <-c.stop:
			return
		case <-time.After(checkpointEvery):
		}
	}
}

// checkpoint runs one PASSIVE checkpoint. A failure is logged: the
// writer's own safety net still bounds the log.
func (c *checkpointer) checkpoint() {
	logPages, copied, err := walCheckpoint(c.db)
	if err != nil {
		c.log.Warn("sqlite store: background checkpoint failed", "err", err)
		return
	}
	c.logPages.Store(int64(logPages))
	c.log.Debug("sqlite store: checkpoint", "log_pages", logPages, "copied", copied)
}

// walCheckpoint runs a PASSIVE checkpoint on db and returns the log's
// size and the pages copied, in pages.
func walCheckpoint(db *sql.DB) (logPages, copied int, err error) {
	var busy int
	err = db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &copied)
	return logPages, copied, err
}

// close stops the goroutine and closes the connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}

// afterCommit runs on the writer goroutine after each group commit: it
// nudges the checkpointer and, when the log has grown past
// writerCheckpointPages and nothing is queued, checkpoints on the
// writer's connection, so that the next commit starts the log again.
func (d *DB) afterCommit() {
	d.ckpt.committed()
	if d.ckpt.logPages.Load() < writerCheckpointPages || len(d.reqs) > 0 {
		return
	}
	if _, _, err := walCheckpoint(d.wdb); err != nil {
		d.log.Warn("sqlite store: writer checkpoint failed", "err", err)
		return
	}
	d.ckpt.logPages.Store(0)
}
