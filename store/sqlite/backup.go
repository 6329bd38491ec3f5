package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// BackupStats describes a finished backup.
type BackupStats struct {
	Bytes         int64 // the size of the backup file
	SchemaVersion int   // the schema version it holds (PRAGMA user_version)
	Runs          int64 // the runs it holds
}

// Backup writes a consistent copy of the skein database at src to the new
// file dst, while other processes (a `skein serve`) go on writing src.
// It is SQLite's VACUUM INTO: one read transaction, so the copy holds
// exactly the commits that had ended when it began, and never a part of
// one; writers are not blocked (the database is in WAL mode). The copy is
// written to a temporary file beside dst, checked (PRAGMA quick_check),
// synced and then renamed to dst, so dst is either whole or absent. dst
// must not exist: a backup never overwrites a file. While it runs,
// progress (if not nil) is called about twice a second with the bytes
// written so far and an estimate of the total (the pages of src in use).
func Backup(ctx context.Context, src, dst string, progress func(written, total int64)) (BackupStats, error) {
	var stats BackupStats
	fail := func(err error) (BackupStats, error) {
		return stats, fmt.Errorf("sqlite backup of %s to %s: %w", src, dst, err)
	}
	if _, err := os.Stat(src); err != nil {
		return fail(err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return fail(errors.New("the output file exists; a backup never overwrites a file: name a new one"))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	// Not query_only: SQLite counts VACUUM INTO as a write, though it
	// writes only the new file.
	db, err := sql.Open("sqlite", dsn(src, url.Values{
		"_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS)},
	}))
	if err != nil {
		return fail(err)
	}
	defer func() { _ = db.Close() }() // it wrote nothing to src: closing it loses nothing
	db.SetMaxOpenConns(1)
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&stats.SchemaVersion); err != nil {
		return fail(fmt.Errorf("read the schema version: %w", damaged(src, err)))
	}
	if stats.SchemaVersion == 0 {
		return fail(errors.New("it holds no skein schema (PRAGMA user_version is 0): name the database `skein serve --db` uses"))
	}
	total, err := usedBytes(ctx, db)
	if err != nil {
		return fail(err)
	}
	tmp := filepath.Join(filepath.Dir(dst), fmt.Sprintf(".%s.partial-%d", filepath.Base(dst), os.Getpid()))
	_ = os.Remove(tmp) // a leftover of an earlier backup by a process of the same id
	stop := watchSize(tmp, total, progress)
	_, err = db.ExecContext(ctx, "VACUUM INTO ?", tmp)
	stop()
	if err == nil {
		err = finishBackup(ctx, tmp, dst, &stats)
	}
	if err != nil {
		_ = os.Remove(tmp) // the partial copy is worth nothing; the error says why
		return fail(err)
	}
	return stats, nil
}

// usedBytes is the size of the pages of db in use: what VACUUM INTO
// writes, about.
func usedBytes(ctx context.Context, db *sql.DB) (int64, error) {
	var pages, free, size int64
	for _, p := range []struct {
		pragma string
		v      *int64
	}{{"page_count", &pages}, {"freelist_count", &free}, {"page_size", &size}} {
		if err := db.QueryRowContext(ctx, "PRAGMA "+p.pragma).Scan(p.v); err != nil {
			return 0, fmt.Errorf("read PRAGMA %s: %w", p.pragma, err)
		}
	}
	return (pages - free) * size, nil
}

// watchSize calls progress with path's size every half second until the
// function it returns is called.
func watchSize(path string, total int64, progress func(written, total int64)) (stop func()) {
	if progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if fi, err := os.Stat(path); err == nil {
					progress(fi.Size(), total)
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

// finishBackup checks the copy at tmp, counts what it holds into stats,
// syncs it and renames it to dst.
func finishBackup(ctx context.Context, tmp, dst string, stats *BackupStats) error {
	if err := quickCheckAlone(ctx, tmp); err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if err := countRuns(ctx, tmp, stats); err != nil {
		return fmt.Errorf("read the copy: %w", err)
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync the copy: %w", err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return errors.New("the output file appeared while the backup ran; a backup never overwrites a file")
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		_ = d.Sync() // the rename is durable once the folder is synced; a folder that cannot be synced still holds the file
		_ = d.Close()
	}
	return nil
}

// countRuns reads the size and the run count of the database file at
// path into stats.
func countRuns(ctx context.Context, path string, stats *BackupStats) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	stats.Bytes = fi.Size()
	db, err := sql.Open("sqlite", dsn(path, url.Values{"_pragma": {"query_only(1)"}}))
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }() // read-only
	return db.QueryRowContext(ctx, "SELECT count(*) FROM runs").Scan(&stats.Runs)
}
