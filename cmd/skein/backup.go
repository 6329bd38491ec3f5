package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skeinrun/skein/store/sqlite"
)

// cmdBackup is `skein backup [--db FILE] OUT.db`: a consistent copy of a
// SQLite database that a `skein serve` may be writing (store/sqlite.Backup).
func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("backup", stderr)
	db := fs.String("db", "skein.db", "the SQLite database file to back up")
	pg := fs.String("store", "", "a PostgreSQL URL: refused, back Postgres up with its own tools (docs/operations.md)")
	quiet := fs.Bool("quiet", false, "print no progress lines")
	asJSON := fs.Bool("json", false, "print what the backup holds as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *pg != "" {
		return &exitError{code: exitUsage, err: errors.New("--store: skein backup copies SQLite files; back PostgreSQL up with pg_dump or point-in-time recovery (docs/operations.md, \"Backups\")")}
	}
	if len(pos) != 1 {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("want exactly one OUT.db, the new file to write")}
	}
	out := pos[0]
	progress := backupProgress(stderr)
	if *quiet {
		progress = nil
	}
	stats, err := sqlite.Backup(ctx, *db, out, progress)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"file": out, "bytes": stats.Bytes, "runs": stats.Runs, "schema_version": stats.SchemaVersion})
	}
	_, err = fmt.Fprintf(stdout, "wrote %s: %d runs, %s (schema version %d)\n", out, stats.Runs, mib(stats.Bytes), stats.SchemaVersion)
	return err
}

// backupProgress prints the progress of a backup to w at most every two
// seconds, so that a small backup prints nothing.
func backupProgress(w io.Writer) func(written, total int64) {
	start := time.Now()
	last := start
	return func(written, total int64) {
		if now := time.Now(); now.Sub(last) >= 2*time.Second {
			last = now
			pct := 100 * float64(written) / float64(max(total, 1))
			fmt.Fprintf(w, "skein backup: %s of about %s (%.0f%%) after %s\n", mib(written), mib(total), min(pct, 100), now.Sub(start).Round(time.Second))
		}
	}
}

// mib formats n bytes in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
