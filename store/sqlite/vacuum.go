package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
)

// VacuumStats describes a Vacuum.
type VacuumStats struct {
	AutoVacuumBefore string // the database's auto_vacuum mode before: none, full or incremental
	BytesBefore      int64  // the file's size before
	BytesAfter       int64  // and after
}

// Vacuum rebuilds the database file at path (SQLite's VACUUM) in
// auto_vacuum INCREMENTAL mode, the mode of every database this package
// creates: after it, the pages of pruned runs go back to the file system
// (store.PruneStore). A database created by an older skein is in mode
// NONE: SQLite reuses its free pages, but its file never shrinks. The
// rebuild needs free space of about the file's size and holds the
// database's write lock until it ends, so run it with no server writing
// (`skein runs prune --db FILE --vacuum`).
func Vacuum(ctx context.Context, path string) (VacuumStats, error) {
	var st VacuumStats
	fi, err := os.Stat(path)
	if err != nil {
		return st, fmt.Errorf("sqlite store: vacuum %s: %w", path, err)
	}
	st.BytesBefore = fi.Size()
	db, err := sql.Open("sqlite", dsn(path, url.Values{"_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS)}}))
	if err != nil {
		return st, fmt.Errorf("sqlite store: vacuum %s: %w", path, err)
	}
	defer func() { _ = db.Close() }() // after VACUUM and its checkpoint, which are checked
	db.SetMaxOpenConns(1)
	var version, mode int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return st, fmt.Errorf("sqlite store: vacuum %s: %w", path, damaged(path, err))
	}
	if version == 0 {
		return st, fmt.Errorf("sqlite store: vacuum %s: %w", path, errors.New("it holds no skein schema (PRAGMA user_version is 0)"))
	}
	if err := db.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return st, fmt.Errorf("sqlite store: vacuum %s: %w", path, err)
	}
	st.AutoVacuumBefore = [...]string{"none", "full", "incremental"}[min(max(mode, 0), 2)]
	for _, q := range []string{"PRAGMA auto_vacuum = INCREMENTAL", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return st, fmt.Errorf("sqlite store: vacuum %s: %s: %w", path, q, err)
		}
	}
	if fi, err := os.Stat(path); err == nil {
		st.BytesAfter = fi.Size()
	}
	return st, nil
}
