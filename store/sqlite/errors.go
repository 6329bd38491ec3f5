package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/skeinrun/skein/store"

	sqlite3 "modernc.org/sqlite"
)

// SQLite result codes (the primary code is the low byte of an extended one).
const (
	sqliteCorrupt = 11
	sqliteFull    = 13
	sqliteNotADB  = 26
)

// writeOnceMark starts the message of the triggers that keep recorded
// outcomes and ended runs write-once (migration 6).
const writeOnceMark = "skein write-once: "

// code returns the primary SQLite result code of err, 0 if it has none.
func code(err error) int {
	var se *sqlite3.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// immutable turns the error of a write-once trigger into one that wraps
// store.ErrImmutable, with the trigger's message (it names the run and
// the key); other errors are returned as they are.
func immutable(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	i := strings.Index(msg, writeOnceMark)
	if i < 0 {
		return err
	}
	msg = msg[i+len(writeOnceMark):]
	if j := strings.LastIndex(msg, " ("); j >= 0 {
		msg = msg[:j] // the result code the driver appends
	}
	return fmt.Errorf("%s: %w", msg, store.ErrImmutable)
}

// full wraps err with store.ErrFull, naming the database, when SQLite
// failed it for lack of space (SQLITE_FULL: the disk is full, or the
// database reached Options.MaxBytes).
func (d *DB) full(err error) error {
	if err == nil || code(err) != sqliteFull || errors.Is(err, store.ErrFull) {
		return err
	}
	limit := ""
	if d.maxBytes > 0 {
		limit = fmt.Sprintf(" or reached its size limit of %d bytes (sqlite.Options.MaxBytes, --db-max-bytes)", d.maxBytes)
	}
	return fmt.Errorf("%w: the disk of database %s is full%s; free space, then the runs that could not commit resume: %w", store.ErrFull, d.path, limit, err)
}

// damaged turns an error of SQLite finding the file damaged or not a
// database (SQLITE_CORRUPT, SQLITE_NOTADB) into a *CorruptError.
func damaged(path string, err error) error {
	if c := code(err); c == sqliteCorrupt || c == sqliteNotADB {
		return &CorruptError{Path: path, Problems: []string{err.Error()}}
	}
	return err
}

// quickCheckAlone runs quickCheck on a connection of its own, with
// SQLite's default page cache, closed when it is done: the check reads
// every page of the file, and on the writer's connection, whose cache
// holds 64 MiB, the pages read would stay in memory for as long as the
// store is open.
func quickCheckAlone(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", dsn(path, url.Values{
		"_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS), "query_only(1)"},
	}))
	if err != nil {
		return fmt.Errorf("integrity check of %s: %w", path, err)
	}
	defer func() { _ = db.Close() }() // a read-only handle: closing it loses nothing
	db.SetMaxOpenConns(1)
	return quickCheck(ctx, db, path)
}

// quickCheck runs PRAGMA quick_check and returns a *CorruptError listing
// the first problems it finds, if any.
func quickCheck(ctx context.Context, db *sql.DB, path string) error {
	failed := func(err error) error {
		if c := code(err); c == sqliteCorrupt || c == sqliteNotADB {
			return &CorruptError{Path: path, Problems: []string{"PRAGMA quick_check: " + err.Error()}}
		}
		return fmt.Errorf("integrity check of %s: %w", path, err)
	}
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check(10)")
	if err != nil {
		return failed(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return failed(err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return failed(err)
	}
	if len(problems) > 0 {
		return &CorruptError{Path: path, Problems: []string{"PRAGMA quick_check: " + strings.Join(problems, "; ")}}
	}
	return nil
}

// limitSize caps the database file at maxBytes (whole pages, at least
// one) with PRAGMA max_page_count on the write connection.
func limitSize(ctx context.Context, db *sql.DB, maxBytes int64) error {
	var pageSize int64
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return fmt.Errorf("read page size: %w", err)
	}
	pages := max(maxBytes/pageSize, 1)
	if _, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		return fmt.Errorf("limit size to %d bytes: %w", maxBytes, err)
	}
	return nil
}
