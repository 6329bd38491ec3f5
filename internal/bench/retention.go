package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// The retention workload (docs/PERFORMANCE.md, "Retention"): a schedule
// firing every second, in compressed virtual time: each virtual day's
// runs are stored as the schedule's runs would be (a run per slot with
// its outcomes, ended a moment after its slot), then pruned as the
// server's pruner would at the end of that day (Host.Prune, horizon the
// day's end minus the retention). From the first prune on, the SQLite
// file must stay within 10% of its size at the end of the first
// retention period.

// retentionSlotOps are the outcomes each run records: two steps.
const retentionSlotOps = 2

// retentionCommit is the runs stored per commit.
const retentionCommit = 200

// RetentionDay is the state of the database at the end of one virtual
// day, after that day's prune.
type RetentionDay struct {
	Day       int
	Runs      int   // runs stored
	Pruned    int   // runs the day's prune deleted
	FileBytes int64 // the database file's size after a checkpoint
	PruneTime time.Duration
	Empty     int64 // the file's size before the first run (the module, the schedule)
}

// Retention runs the retention workload: days virtual days of perDay
// runs each (one per 86400/perDay seconds of slots), keep days of
// retention. It returns each day's state; it fails if the file grew by
// more than 10% past its size at day keep.
func (e *Env) Retention(ctx context.Context, days, keep, perDay int, progress io.Writer) ([]RetentionDay, error) {
	if e.db == "" {
		return nil, errors.New("bench: the retention workload runs on a SQLite file")
	}
	if days <= keep || keep <= 0 || perDay <= 0 || 86400%perDay != 0 {
		return nil, fmt.Errorf("bench: retention: want 0 < keep (%d) < days (%d), and runs per day (%d) dividing 86400", keep, days, perDay)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := 86400 / perDay * int(time.Second)
	sc, err := e.Store.CreateSchedule(ctx, store.Schedule{Name: "tick", Cron: "* * * * * *", Module: e.Module.Hash, Workflow: "sequential", Overlap: store.OverlapSkip})
	if err != nil {
		return nil, fmt.Errorf("bench: retention: %w", err)
	}
	empty, err := checkpointedSize(ctx, e.db)
	if err != nil {
		return nil, err
	}
	value := []byte(`"` + strings.Repeat("v", 62) + `"`)
	var out []RetentionDay
	stored := 0
	for day := 1; day <= days; day++ {
		dayStart := t0.Add(time.Duration(day-1) * 24 * time.Hour)
		for i := 0; i < perDay; i += retentionCommit {
			var b store.Batch
			for j := i; j < min(i+retentionCommit, perDay); j++ {
				slot := dayStart.Add(time.Duration(j * step))
				retentionRun(&b, store.ScheduleRunID(sc.Name, slot), e.Module.Hash, slot, value)
			}
			if err := e.Store.Commit(ctx, b); err != nil {
				return nil, fmt.Errorf("bench: retention: day %d: %w", day, err)
			}
		}
		stored += perDay
		last := dayStart.Add(time.Duration((perDay - 1) * step))
		sc.LastFired, sc.LastSlot, sc.Fired = last.UnixNano(), last.UnixNano(), int64(stored)
		if sc, err = e.Store.UpdateSchedule(ctx, sc); err != nil {
			return nil, fmt.Errorf("bench: retention: day %d: %w", day, err)
		}
		t := time.Now()
		rep, err := e.Host.Prune(ctx, dayStart.Add(24*time.Hour-time.Duration(keep)*24*time.Hour), false)
		took := time.Since(t)
		if err != nil {
			return nil, fmt.Errorf("bench: retention: day %d: %w", day, err)
		}
		size, err := checkpointedSize(ctx, e.db)
		if err != nil {
			return nil, err
		}
		d := RetentionDay{Day: day, Runs: stored, Pruned: rep.Runs, FileBytes: size, PruneTime: took, Empty: empty}
		out = append(out, d)
		fmt.Fprintf(progress, "retention: day %d: %d runs stored, %d pruned, file %.2f MiB\n", day, stored, rep.Runs, mib(size))
	}
	base := out[keep-1].FileBytes
	for _, d := range out[keep:] {
		if float64(d.FileBytes) > 1.1*float64(base) {
			return out, fmt.Errorf("bench: retention: the database is %d bytes at day %d, more than 10%% over its %d bytes at day %d", d.FileBytes, d.Day, base, keep)
		}
	}
	return out, nil
}

// retentionRun adds to b a run of a schedule slot as its execution would
// leave it: created at its slot, its steps' outcomes, completed a moment
// later.
func retentionRun(b *store.Batch, id, module string, slot time.Time, value []byte) {
	end := slot.Add(50 * time.Millisecond)
	b.Creates = append(b.Creates, store.Run{ID: id, ModuleHash: module, Workflow: "sequential", Input: []byte("null"),
		Status: store.RunRunning, StartTime: slot.UnixNano(), CreatedAt: slot, UpdatedAt: slot})
	for k := 1; k <= retentionSlotOps; k++ {
		b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: id, Outcome: store.Outcome{Key: fmt.Sprint(k), Kind: "step", Function: "step",
			Status: store.OutcomeOK, Value: value, Attempts: 1, Seq: int64(k), VTime: slot.UnixNano(), UpdatedAt: end,
			StartedAt: slot.UnixNano(), SettledAt: end.UnixNano()}})
	}
	b.Runs = append(b.Runs, store.Run{ID: id, ModuleHash: module, Status: store.RunCompleted, Result: value, UpdatedAt: end})
}

// checkpointedSize checkpoints the write-ahead log of the database at
// path into it and returns the database's size: its pages times their
// size, which is the file's size once the log is checkpointed (a
// checkpoint a reader holds up leaves the file at an older size).
func checkpointedSize(ctx context.Context, path string) (int64, error) {
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, err
	}
	defer func() { _ = db.Close() }() // a checkpoint and two reads, checked: closing loses nothing
	var busy, logPages, done int
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done); err != nil {
		return 0, fmt.Errorf("bench: retention: checkpoint: %w", err)
	}
	var pages, size int64
	if err := db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return 0, fmt.Errorf("bench: retention: page count: %w", err)
	}
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&size); err != nil {
		return 0, fmt.Errorf("bench: retention: page size: %w", err)
	}
	return pages * size, nil
}

// retentionFigures adds the figures of the retention workload.
func retentionFigures(ctx context.Context, e *Env, s Sizes, progress io.Writer, add func(string, float64)) error {
	days, err := e.Retention(ctx, s.RetentionDays, s.RetentionKeep, s.RetentionPerDay, progress)
	if len(days) <= s.RetentionKeep {
		return err
	}
	base := days[s.RetentionKeep-1].FileBytes
	ratio, pruned, took := 0.0, 0, time.Duration(0)
	for _, d := range days[s.RetentionKeep:] {
		ratio = max(ratio, float64(d.FileBytes)/float64(base))
		pruned, took = pruned+d.Pruned, took+d.PruneTime
	}
	add("runs_per_day", float64(s.RetentionPerDay))
	add("rows_per_day", float64(s.RetentionPerDay*(1+retentionSlotOps)))
	add("bytes_per_day", float64(base-days[0].Empty)/float64(s.RetentionKeep))
	add("file_mib_at_retention", mib(base))
	add("file_mib_at_end", mib(days[len(days)-1].FileBytes))
	add("max_file_ratio_after_retention", ratio) // to the file at day keep: at most 1.1
	if took > 0 {
		add("pruned_runs_per_s", float64(pruned)/took.Seconds())
	}
	return err
}
