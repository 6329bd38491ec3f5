// Package postgres implements store.Store on PostgreSQL, through
// github.com/jackc/pgx/v5 and its connection pool (pgxpool).
//
// It keeps the tables and the semantics of store/sqlite (modules, runs,
// outcomes, settlements; the same upsert rules and due-run conditions),
// so that several skein processes can share one database. The batches of
// Commit are committed by a writer goroutine in groups, one pipeline and
// one implicit transaction per group (group.go); every other write is one
// transaction of its own. The schema is
// versioned (see migrate) and created on Open.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skeinrun/skein/store"
)

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("store is closed")

// Options configures Open. The zero value is valid.
type Options struct {
	// Logger receives migration events. Nil discards them.
	Logger *slog.Logger
	// MaxConns bounds the connection pool; 0 keeps pgxpool's default
	// (or the DSN's pool_max_conns).
	MaxConns int32
}

// DB is a store.Store backed by a PostgreSQL database. It is safe for
// concurrent use. Create it with Open and release it with Close.
type DB struct {
	pool      *pgxpool.Pool
	log       *slog.Logger
	closed    atomic.Bool
	closeOnce sync.Once
	w         *writer // commits the batches of Commit in groups
}

var _ store.Store = (*DB)(nil)

// Open connects to the PostgreSQL database named by dsn (a postgres:// URL
// or a key=value connection string, as pgx accepts; a search_path
// parameter selects the schema), applies any pending schema migrations and
// returns the store. It fails if the schema was written by a newer version
// of skein (see SchemaTooNewError).
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	return open(ctx, dsn, opts, nil)
}

// open is Open, with config (if not nil) given the pool's configuration
// to change before it connects (the tests' counting connections).
func open(ctx context.Context, dsn string, opts Options, config func(*pgxpool.Config)) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres store: parse dsn: %w", err)
	}
	if config != nil {
		config(cfg)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		if unreachable(err) {
			err = fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("postgres store: open: %w", err)
	}
	if err := checkSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: open: %w", err)
	}
	if err := migrate(ctx, pool, log); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: open: %w", err)
	}
	log.Debug("postgres store: opened", "host", cfg.ConnConfig.Host, "database", cfg.ConnConfig.Database)
	d := &DB{pool: pool, log: log}
	d.startWriter()
	return d, nil
}

// ErrNoSchema is returned (wrapped) by Open when no schema that the
// connection's search_path names exists: skein creates its tables, not
// the schema they live in.
var ErrNoSchema = errors.New("no schema of the search_path exists")

// checkSchema fails with ErrNoSchema, naming the search_path, when the
// connection has no current schema to create tables in (PostgreSQL would
// say only "no schema has been selected to create in", SQLSTATE 3F000).
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	var current *string
	var path string
	err := pool.QueryRow(ctx, `SELECT current_schema(), current_setting('search_path')`).Scan(&current, &path)
	if err != nil {
		return fmt.Errorf("read the current schema: %w", err)
	}
	if current == nil {
		return fmt.Errorf("%w (search_path is %q): create the schema first (CREATE SCHEMA name;) or name an existing one in the URL's search_path parameter", ErrNoSchema, path)
	}
	return nil
}

// Close fails the commits still waiting for the writer with ErrClosed,
// waits for the group in flight and the other operations in progress to
// return their connections, then closes the pool. Every method fails with
// ErrClosed afterwards. Calling Close again is a no-op.
func (d *DB) Close() error {
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		d.stopWriter()
		d.pool.Close()
	})
	return nil
}

// check returns ErrClosed after Close, and ctx's error if it has ended.
func (d *DB) check(ctx context.Context) error {
	if d.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// unstorable reports whether any of texts is one that no row can hold
// (store.ValidText): PostgreSQL refuses it as a parameter, so a read
// that names one finds nothing without asking, as in every backend.
func unstorable(texts ...string) bool {
	for _, t := range texts {
		if !store.ValidText(t) {
			return true
		}
	}
	return false
}

// unstorableArgs is unstorable for the string arguments of a query.
func unstorableArgs(args []any) bool {
	for _, a := range args {
		if s, ok := a.(string); ok && unstorable(s) {
			return true
		}
	}
	return false
}

// maxTxAttempts bounds how often inTx runs a transaction that PostgreSQL
// aborted for a deadlock or a serialization failure.
const maxTxAttempts = 5

// inTx runs fn in a transaction and commits it, retrying the whole
// transaction when PostgreSQL aborts it for a deadlock or a serialization
// failure (fn must be safe to run again). An error from fn rolls back.
func (d *DB) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	var err error
	for range maxTxAttempts {
		err = pgx.BeginFunc(ctx, d.pool, fn)
		if !retryable(err) {
			break
		}
	}
	return d.wrapClosed(err)
}

// inStmt runs fn, which makes one statement (its own implicit
// transaction: one round trip, no BEGIN and COMMIT), again when
// PostgreSQL aborted it for a deadlock or a serialization failure.
func (d *DB) inStmt(ctx context.Context, fn func() error) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	var err error
	for range maxTxAttempts {
		err = fn()
		if !retryable(err) {
			break
		}
	}
	return d.wrapClosed(err)
}

// retryable reports whether err aborted a transaction that may succeed
// when run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// badTextState and untranslatableState are PostgreSQL's SQLSTATEs
// character_not_in_repertoire (a NUL byte, invalid UTF-8) and
// untranslatable_character.
const (
	badTextState        = "22021"
	untranslatableState = "22P05"
)

// diskFullState is PostgreSQL's SQLSTATE disk_full.
const diskFullState = "53100"

// wrapClosed turns the pool's complaint about being closed (a Close that
// raced with the call) into ErrClosed, a failure to reach the database
// into store.ErrUnavailable, a write-once trigger's error into
// store.ErrImmutable and a full disk into store.ErrFull.
func (d *DB) wrapClosed(err error) error {
	var pe *pgconn.PgError
	switch {
	case err == nil, errors.Is(err, ErrClosed), errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrImmutable), errors.Is(err, store.ErrFull), errors.Is(err, store.ErrInvalidText):
		return err
	case errors.As(err, &pe) && pe.Code == writeOnceState:
		return fmt.Errorf("%s: %w", pe.Message, store.ErrImmutable)
	case errors.As(err, &pe) && (pe.Code == badTextState || pe.Code == untranslatableState):
		// The Go checks of every write (store.ErrInvalidText) come first;
		// this keeps a text they missed a clear, permanent error.
		return fmt.Errorf("%w: %w", store.ErrInvalidText, err)
	case errors.As(err, &pe) && pe.Code == diskFullState:
		return fmt.Errorf("%w: the disk of the PostgreSQL database is full (SQLSTATE %s); free space, then the runs that could not commit resume: %w", store.ErrFull, pe.Code, err)
	case d.closed.Load():
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case unreachable(err):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// unreachable reports whether err says the database could not be
// reached: a failed connection, a connection lost or refused, or the
// server shutting down or starting up (SQLSTATE classes 08 and 57P0x).
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	case errors.As(err, &pe):
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	return false
}
