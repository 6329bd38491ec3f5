// Package sqlite implements store.Store on an embedded SQLite database
// (modernc.org/sqlite, pure Go).
//
// The database runs in WAL mode. One writer goroutine owns the only write
// connection and applies every write: concurrent Commit calls are grouped
// into one transaction (group commit), so a commit's cost in fsyncs is
// shared by everyone waiting at that moment. Reads go through a separate
// pool of read-only connections and do not block the writer. An in-memory
// database (":memory:") uses one connection for both.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/store"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Durability levels accepted by Options.Durability.
const (
	// DurabilityNormal (the default) runs WAL with synchronous=NORMAL: a
	// committed batch survives a crash of the process but may be lost on
	// power failure or an OS crash.
	DurabilityNormal = "normal"
	// DurabilityStrict runs WAL with synchronous=FULL: every commit is
	// fsynced and survives power loss, at the cost of one fsync per group.
	DurabilityStrict = "strict"
)

// memoryPath is the path that selects a private in-memory database.
const memoryPath = ":memory:"

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection (another process sharing the file, or a checkpoint) before
// failing with SQLITE_BUSY.
const busyTimeoutMS = 10000

// maxGroup bounds how many queued writes one transaction takes up.
const maxGroup = 512

// ErrClosed is returned by every write after Close.
var ErrClosed = errors.New("store is closed")

// Options configures Open. The zero value is valid.
type Options struct {
	// Durability is DurabilityNormal ("normal", the default when empty) or
	// DurabilityStrict ("strict"). Any other value makes Open fail.
	Durability string
	// Logger receives migration and writer events. Nil discards them.
	Logger *slog.Logger
	// SkipIntegrityCheck opens a database without running PRAGMA
	// quick_check first. By default Open runs it (its cost follows the
	// size of the file) and refuses a damaged database with a
	// *CorruptError, rather than serving errors from its damaged pages.
	SkipIntegrityCheck bool
	// MaxBytes, if positive, caps the size of the database file (PRAGMA
	// max_page_count): a write that would grow it further fails with
	// store.ErrFull (wrapped), as when the disk is full, and the file
	// never grows past the cap (it is not shrunk when already larger).
	MaxBytes int64
}

// CorruptError is returned by Open for a database that PRAGMA quick_check
// finds damaged, or that SQLite cannot read as a database at all.
type CorruptError struct {
	Path     string
	Problems []string // what quick_check reported, or SQLite's error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("database %s is damaged (%s): stop every process using it and restore it from a backup; "+
		"sqlite.Options.SkipIntegrityCheck (skein --skip-integrity-check) opens it anyway, and writes that touch the damaged pages will fail",
		e.Path, strings.Join(e.Problems, "; "))
}

// DB is a store.Store backed by one SQLite database. It is safe for
// concurrent use. Create it with Open and release it with Close.
type DB struct {
	path     string
	maxBytes int64 // Options.MaxBytes
	log      *slog.Logger
	wdb      *sql.DB       // one connection, used only by the writer goroutine (and by readers for ":memory:")
	rdb      *sql.DB       // read-only pool; the same as wdb for ":memory:"
	rd       reads         // prepared on rdb
	ckpt     *checkpointer // nil for ":memory:"
	wc       *wconn        // the writer's statements, prepared on wdb's connection (raw.go)
	reqs     chan *request
	done     chan struct{} // closed when the writer goroutine has exited
	mu       sync.RWMutex  // guards closed against concurrent sends on reqs
	closed   bool

	// Buffers reused by the writer goroutine only.
	args          []any
	mergeOutcomes []store.RunOutcome
	mergeRuns     []store.Run
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the SQLite database at path, or a private
// in-memory database when path is ":memory:", applies any pending schema
// migrations and starts the writer goroutine. It fails if the database was
// written by a newer version of skein (see SchemaTooNewError).
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	var syncMode string
	switch opts.Durability {
	case "", DurabilityNormal:
		syncMode = "NORMAL"
	case DurabilityStrict:
		syncMode = "FULL"
	default:
		return nil, fmt.Errorf("sqlite store: unknown durability %q (allowed: %q, %q)", opts.Durability, DurabilityNormal, DurabilityStrict)
	}
	if path == "" {
		return nil, errors.New("sqlite store: empty path (use \":memory:\" for an in-memory database)")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite store: path %q must not contain '?'", path)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	memory := path == memoryPath

	wdb, err := sql.Open("sqlite", dsn(path, url.Values{
		"_txlock": {"immediate"},
		"_pragma": {
			fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS),
			// Before journal_mode: a new database gets it before it has a
			// page, so pruned runs' pages go back to the file system
			// (prune.go). An older database keeps auto_vacuum NONE until
			// Vacuum.
			"auto_vacuum(incremental)",
			"journal_mode(WAL)",
			"synchronous(" + syncMode + ")",
			"foreign_keys(1)",
			"cache_size(-65536)",                                  // 64 MiB: a large group commit must not spill to the WAL mid-transaction
			fmt.Sprintf("wal_autocheckpoint(%d)", walSafetyPages), // the checkpointer does the rest (checkpoint.go)
		},
	}))
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: %w", path, err)
	}
	// One connection: the writer owns it. Keeping it idle forever also keeps
	// an in-memory database alive.
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	if err := setupRetrying(ctx, func() error { return setup(ctx, wdb, path, memory, opts, log) }); err != nil {
		_ = wdb.Close() // the setup's error is the one to return
		return nil, err
	}

	d := &DB{
		path:     path,
		maxBytes: opts.MaxBytes,
		log:      log,
		wdb:      wdb,
		rdb:      wdb,
		reqs:     make(chan *request, maxGroup),
		done:     make(chan struct{}),
	}
	if err := d.withConn(ctx, func(*wconn) error { return nil }); err != nil {
		_ = wdb.Close() // cleanup on a failed open: err is the one to return
		return nil, fmt.Errorf("sqlite store: open %s: %w", path, err)
	}
	if err := d.openReaders(ctx, memory); err != nil {
		_ = d.closeWriter() // cleanup on a failed open: err is the one to return
		_ = wdb.Close()
		return nil, fmt.Errorf("sqlite store: open %s: %w", path, err)
	}
	go d.writeLoop()
	log.Debug("sqlite store: opened", "path", path, "durability", opts.Durability)
	return d, nil
}

// openReaders opens what reads the database besides the writer: the
// read pool with its prepared statements and the checkpointer (a file
// database; ":memory:" reads through the writer's connection).
func (d *DB) openReaders(ctx context.Context, memory bool) error {
	if !memory {
		rdb, err := openReadPool(ctx, d.path)
		if err != nil {
			return fmt.Errorf("read pool: %w", err)
		}
		d.rdb = rdb
		if d.ckpt, err = startCheckpointer(ctx, d.path, d.log); err != nil {
			_ = rdb.Close() // the checkpointer's error is the one to return
			return fmt.Errorf("checkpointer: %w", err)
		}
	}
	if err := d.rd.prepare(ctx, d.rdb); err != nil {
		// Cleanup on a failed open: the prepare's error is the one to return.
		_ = d.rd.close()
		if d.ckpt != nil {
			_ = d.ckpt.close()
		}
		if d.rdb != d.wdb {
			_ = d.rdb.Close()
		}
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// openReadPool opens the pool of read-only connections to the database
// at path.
func openReadPool(ctx context.Context, path string) (*sql.DB, error) {
	rdb, err := sql.Open("sqlite", dsn(path, url.Values{
		"_pragma": {
			fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS),
			"query_only(1)",
		},
	}))
	if err != nil {
		return nil, err
	}
	n := max(4, runtime.GOMAXPROCS(0))
	rdb.SetMaxOpenConns(n)
	rdb.SetMaxIdleConns(n)
	if err := rdb.PingContext(ctx); err != nil {
		_ = rdb.Close() // the ping's error is the one to return
		return nil, err
	}
	return rdb, nil
}

// setup checks and migrates the database of a new store: it connects
// (applying the connection's pragmas), checks the journal mode and the
// database's integrity, migrates the schema and sets the size limit.
func setup(ctx context.Context, wdb *sql.DB, path string, memory bool, opts Options, log *slog.Logger) error {
	if err := wdb.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite store: open %s: %w", path, damaged(path, err))
	}
	if !memory {
		var mode string
		if err := wdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return fmt.Errorf("sqlite store: open %s: read journal mode: %w", path, damaged(path, err))
		}
		if !strings.EqualFold(mode, "wal") {
			log.Warn("sqlite store: WAL mode unavailable; readers will block the writer", "path", path, "journal_mode", mode)
		}
	}
	if !memory && !opts.SkipIntegrityCheck {
		if err := quickCheckAlone(ctx, path); err != nil {
			return fmt.Errorf("sqlite store: open %s: %w", path, err)
		}
	}
	if err := migrate(ctx, wdb, log); err != nil {
		return fmt.Errorf("sqlite store: open %s: %w", path, damaged(path, err))
	}
	if opts.MaxBytes > 0 {
		if err := limitSize(ctx, wdb, opts.MaxBytes); err != nil {
			return fmt.Errorf("sqlite store: open %s: %w", path, err)
		}
	}
	return nil
}

// setupRetrying runs setup again while SQLite answers that the database
// is busy: processes that open a new database at once race to switch it
// to WAL and to migrate it, and SQLite reports some of those conflicts
// at once, without waiting out the busy timeout (it would deadlock).
func setupRetrying(ctx context.Context, setup func() error) error {
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := setup()
		if c := code(err); c != 5 && c != 6 || time.Now().After(deadline) { // SQLITE_BUSY, SQLITE_LOCKED
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// dsn builds a modernc.org/sqlite data source name: the plain path followed
// by driver parameters.
func dsn(path string, q url.Values) string {
	return path + "?" + q.Encode()
}

// Close waits for every write already queued to be applied, stops the writer
// and closes the database. Writes after Close fail with ErrClosed. Calling
// Close again is a no-op.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	close(d.reqs)
	d.mu.Unlock()
	<-d.done

	var errs []error
	if d.ckpt != nil {
		errs = append(errs, d.ckpt.close())
	}
	errs = append(errs, d.closeWriter(), d.rd.close())
	if d.rdb != d.wdb {
		errs = append(errs, d.rdb.Close())
	}
	errs = append(errs, d.wdb.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite store: close %s: %w", d.path, err)
	}
	return nil
}

// closeWriter closes the writer's prepared statements (raw.go), once the
// writer goroutine has stopped or before it starts.
func (d *DB) closeWriter() error {
	if d.wc == nil {
		return nil
	}
	conn, err := d.wdb.Conn(context.Background())
	if err != nil {
		return fmt.Errorf("writer connection: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		if d.wc.dc != dc {
			return nil // prepared on a connection database/sql has dropped
		}
		err := d.wc.close()
		d.wc = nil
		return err
	})
}
