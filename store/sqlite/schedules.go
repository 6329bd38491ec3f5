package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// Schedules and hooks (store.ScheduleStore): one row each, the record as
// JSON (schema migration "schedules and webhooks").

// CreateSchedule stores a new schedule with version 1.
func (d *DB) CreateSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	if err := sc.CheckTexts(); err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite store: create schedule: %w", err)
	}
	sc.Version = 1
	sc.CreatedAt = time.Unix(0, nanos(sc.CreatedAt, time.Now()))
	doc, err := json.Marshal(sc)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite store: create schedule %q: %w", sc.Name, err)
	}
	err = d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		res, err := w.tx.ExecContext(w.ctx, `INSERT INTO schedules (name, doc, version, created_at) VALUES (?, ?, 1, ?) ON CONFLICT (name) DO NOTHING`,
			sc.Name, doc, sc.CreatedAt.UnixNano())
		return inserted(res, err)
	}})
	if err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite store: create schedule %q: %w", sc.Name, err)
	}
	return sc, nil
}

// inserted turns an INSERT ... DO NOTHING that inserted nothing into
// store.ErrConflict.
func inserted(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("the name is taken: %w", store.ErrConflict)
	}
	return nil
}

// Schedule returns one schedule.
func (d *DB) Schedule(ctx context.Context, name string) (store.Schedule, error) {
	sc, err := scanSchedule(d.rdb.QueryRowContext(ctx, `SELECT doc, version, created_at FROM schedules WHERE name = ?`, name))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite store: schedule %q: %w", name, err)
	}
	return sc, nil
}

// Schedules lists every schedule by name.
func (d *DB) Schedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := d.rdb.QueryContext(ctx, `SELECT doc, version, created_at FROM schedules ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: list schedules: %w", err)
	}
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: list schedules: %w", err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: list schedules: %w", err)
	}
	return out, nil
}

// UpdateSchedule replaces a schedule if its version is still sc.Version.
func (d *DB) UpdateSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	if err := sc.CheckTexts(); err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite store: update schedule: %w", err)
	}
	doc, err := json.Marshal(sc)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite store: update schedule %q: %w", sc.Name, err)
	}
	err = d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		res, err := w.tx.ExecContext(w.ctx, `UPDATE schedules SET doc = ?, version = version + 1 WHERE name = ? AND version = ?`, doc, sc.Name, sc.Version)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var v int64
		if err := w.tx.QueryRowContext(w.ctx, `SELECT version FROM schedules WHERE name = ?`, sc.Name).Scan(&v); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		return fmt.Errorf("version %d is not the stored %d: %w", sc.Version, v, store.ErrConflict)
	}})
	if err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite store: update schedule %q: %w", sc.Name, err)
	}
	sc.Version++
	return sc, nil
}

// DeleteSchedule deletes a schedule.
func (d *DB) DeleteSchedule(ctx context.Context, name string) error {
	return d.deleteNamed(ctx, "schedules", name)
}

// deleteNamed deletes the row of a name from table, or fails with
// store.ErrNotFound.
func (d *DB) deleteNamed(ctx context.Context, table, name string) error {
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		res, err := w.tx.ExecContext(w.ctx, `DELETE FROM `+table+` WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return store.ErrNotFound
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: delete from %s %q: %w", table, name, err)
	}
	return nil
}

// CreateHook stores a new hook.
func (d *DB) CreateHook(ctx context.Context, h store.Hook) (store.Hook, error) {
	if err := h.CheckTexts(); err != nil {
		return store.Hook{}, fmt.Errorf("sqlite store: create hook: %w", err)
	}
	h.CreatedAt = time.Unix(0, nanos(h.CreatedAt, time.Now()))
	doc, err := json.Marshal(h)
	if err != nil {
		return store.Hook{}, fmt.Errorf("sqlite store: create hook %q: %w", h.Name, err)
	}
	err = d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		res, err := w.tx.ExecContext(w.ctx, `INSERT INTO hooks (name, doc, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			h.Name, doc, h.CreatedAt.UnixNano())
		return inserted(res, err)
	}})
	if err != nil {
		return store.Hook{}, fmt.Errorf("sqlite store: create hook %q: %w", h.Name, err)
	}
	return h, nil
}

// Hook returns one hook.
func (d *DB) Hook(ctx context.Context, name string) (store.Hook, error) {
	h, err := scanHook(d.rdb.QueryRowContext(ctx, `SELECT doc, created_at FROM hooks WHERE name = ?`, name))
	if err != nil {
		return store.Hook{}, fmt.Errorf("sqlite store: hook %q: %w", name, err)
	}
	return h, nil
}

// Hooks lists every hook by name.
func (d *DB) Hooks(ctx context.Context) ([]store.Hook, error) {
	rows, err := d.rdb.QueryContext(ctx, `SELECT doc, created_at FROM hooks ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: list hooks: %w", err)
	}
	defer rows.Close()
	var out []store.Hook
	for rows.Next() {
		h, err := scanHook(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: list hooks: %w", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: list hooks: %w", err)
	}
	return out, nil
}

// DeleteHook deletes a hook.
func (d *DB) DeleteHook(ctx context.Context, name string) error {
	return d.deleteNamed(ctx, "hooks", name)
}

type scanner interface{ Scan(dest ...any) error }

func scanSchedule(s scanner) (store.Schedule, error) {
	var doc []byte
	var sc store.Schedule
	var created int64
	if err := s.Scan(&doc, &sc.Version, &created); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return sc, store.ErrNotFound
		}
		return sc, err
	}
	v := sc.Version
	if err := json.Unmarshal(doc, &sc); err != nil {
		return sc, fmt.Errorf("decode schedule: %w", err)
	}
	sc.Version, sc.CreatedAt = v, time.Unix(0, created)
	return sc, nil
}

func scanHook(s scanner) (store.Hook, error) {
	var doc []byte
	var h store.Hook
	var created int64
	if err := s.Scan(&doc, &created); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return h, store.ErrNotFound
		}
		return h, err
	}
	if err := json.Unmarshal(doc, &h); err != nil {
		return h, fmt.Errorf("decode hook: %w", err)
	}
	h.CreatedAt = time.Unix(0, created)
	return h, nil
}

// ClaimDelivery records a delivery of a hook unless it is recorded and
// unexpired (see store.ScheduleStore), deleting the expired records in
// the same write.
func (d *DB) ClaimDelivery(ctx context.Context, hook, id string, now, expires int64) (bool, error) {
	var claimed bool
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		if _, err := w.tx.ExecContext(w.ctx, `DELETE FROM hook_deliveries WHERE expires <= ?`, now); err != nil {
			return err
		}
		res, err := w.tx.ExecContext(w.ctx, `INSERT INTO hook_deliveries (hook, id, expires) VALUES (?, ?, ?) ON CONFLICT (hook, id) DO NOTHING`,
			hook, id, expires)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		claimed = n == 1
		return err
	}})
	if err != nil {
		return false, fmt.Errorf("sqlite store: claim delivery of hook %q: %w", hook, err)
	}
	return claimed, nil
}

// ReleaseDelivery forgets a claimed delivery.
func (d *DB) ReleaseDelivery(ctx context.Context, hook, id string) error {
	err := d.write(&request{ctx: ctx, apply: func(w *wtx) error {
		_, err := w.tx.ExecContext(w.ctx, `DELETE FROM hook_deliveries WHERE hook = ? AND id = ?`, hook, id)
		return err
	}})
	if err != nil {
		return fmt.Errorf("sqlite store: release delivery of hook %q: %w", hook, err)
	}
	return nil
}
