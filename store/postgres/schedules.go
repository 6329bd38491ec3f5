package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/store"
)

// Schedules and hooks (store.ScheduleStore): one row each, the record as
// JSON (schema migration "schedules and webhooks").

// CreateSchedule stores a new schedule with version 1.
func (d *DB) CreateSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	if err := sc.CheckTexts(); err != nil {
		return store.Schedule{}, fmt.Errorf("postgres store: create schedule: %w", err)
	}
	sc.Version = 1
	if sc.CreatedAt.IsZero() {
		sc.CreatedAt = time.Now()
	}
	sc.CreatedAt = time.Unix(0, sc.CreatedAt.UnixNano())
	doc, err := json.Marshal(sc)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("postgres store: create schedule %q: %w", sc.Name, err)
	}
	err = d.insertNamed(ctx, `INSERT INTO schedules (name, doc, version, created_at) VALUES ($1, $2, 1, $3) ON CONFLICT (name) DO NOTHING`,
		sc.Name, doc, sc.CreatedAt.UnixNano())
	if err != nil {
		return store.Schedule{}, fmt.Errorf("postgres store: create schedule %q: %w", sc.Name, err)
	}
	return sc, nil
}

// insertNamed runs an INSERT ... DO NOTHING of a named row, and fails
// with store.ErrConflict when the name is taken.
func (d *DB) insertNamed(ctx context.Context, sql string, args ...any) error {
	return d.inStmt(ctx, func() error {
		tag, err := d.pool.Exec(ctx, sql, args...)
		if err == nil && tag.RowsAffected() == 0 {
			err = fmt.Errorf("the name is taken: %w", store.ErrConflict)
		}
		return err
	})
}

// Schedule returns one schedule.
func (d *DB) Schedule(ctx context.Context, name string) (store.Schedule, error) {
	if err := d.check(ctx); err != nil {
		return store.Schedule{}, fmt.Errorf("postgres store: schedule %q: %w", name, err)
	}
	if unstorable(name) {
		return store.Schedule{}, fmt.Errorf("postgres store: schedule %q: %w", name, store.ErrNotFound)
	}
	sc, err := scanSchedule(d.pool.QueryRow(ctx, `SELECT doc, version, created_at FROM schedules WHERE name = $1`, name))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("postgres store: schedule %q: %w", name, d.wrapClosed(err))
	}
	return sc, nil
}

// Schedules lists every schedule by name.
func (d *DB) Schedules(ctx context.Context) ([]store.Schedule, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: list schedules: %w", err)
	}
	rows, err := d.pool.Query(ctx, `SELECT doc, version, created_at FROM schedules ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("postgres store: list schedules: %w", d.wrapClosed(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Schedule, error) { return scanSchedule(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres store: list schedules: %w", d.wrapClosed(err))
	}
	return out, nil
}

// UpdateSchedule replaces a schedule if its version is still sc.Version.
func (d *DB) UpdateSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	if err := sc.CheckTexts(); err != nil {
		return store.Schedule{}, fmt.Errorf("postgres store: update schedule: %w", err)
	}
	doc, err := json.Marshal(sc)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("postgres store: update schedule %q: %w", sc.Name, err)
	}
	var v int64
	err = d.inStmt(ctx, func() error {
		err := d.pool.QueryRow(ctx, `UPDATE schedules SET doc = $1, version = version + 1 WHERE name = $2 AND version = $3 RETURNING version`,
			doc, sc.Name, sc.Version).Scan(&v)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := d.pool.QueryRow(ctx, `SELECT version FROM schedules WHERE name = $1`, sc.Name).Scan(&v); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		return fmt.Errorf("version %d is not the stored %d: %w", sc.Version, v, store.ErrConflict)
	})
	if err != nil {
		return store.Schedule{}, fmt.Errorf("postgres store: update schedule %q: %w", sc.Name, err)
	}
	sc.Version = v
	return sc, nil
}

// DeleteSchedule deletes a schedule.
func (d *DB) DeleteSchedule(ctx context.Context, name string) error {
	return d.deleteNamed(ctx, "schedules", name)
}

// deleteNamed deletes the row of a name from table, or fails with
// store.ErrNotFound.
func (d *DB) deleteNamed(ctx context.Context, table, name string) error {
	if unstorable(name) {
		return fmt.Errorf("postgres store: delete %q from %s: %w", name, table, store.ErrNotFound)
	}
	err := d.inStmt(ctx, func() error {
		tag, err := d.pool.Exec(ctx, `DELETE FROM `+table+` WHERE name = $1`, name)
		if err == nil && tag.RowsAffected() == 0 {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: delete from %s %q: %w", table, name, err)
	}
	return nil
}

// CreateHook stores a new hook.
func (d *DB) CreateHook(ctx context.Context, h store.Hook) (store.Hook, error) {
	if err := h.CheckTexts(); err != nil {
		return store.Hook{}, fmt.Errorf("postgres store: create hook: %w", err)
	}
	if h.CreatedAt.IsZero() {
		h.CreatedAt = time.Now()
	}
	h.CreatedAt = time.Unix(0, h.CreatedAt.UnixNano())
	doc, err := json.Marshal(h)
	if err != nil {
		return store.Hook{}, fmt.Errorf("postgres store: create hook %q: %w", h.Name, err)
	}
	err = d.insertNamed(ctx, `INSERT INTO hooks (name, doc, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		h.Name, doc, h.CreatedAt.UnixNano())
	if err != nil {
		return store.Hook{}, fmt.Errorf("postgres store: create hook %q: %w", h.Name, err)
	}
	return h, nil
}

// Hook returns one hook.
func (d *DB) Hook(ctx context.Context, name string) (store.Hook, error) {
	if err := d.check(ctx); err != nil {
		return store.Hook{}, fmt.Errorf("postgres store: hook %q: %w", name, err)
	}
	if unstorable(name) {
		return store.Hook{}, fmt.Errorf("postgres store: hook %q: %w", name, store.ErrNotFound)
	}
	h, err := scanHook(d.pool.QueryRow(ctx, `SELECT doc, created_at FROM hooks WHERE name = $1`, name))
	if err != nil {
		return store.Hook{}, fmt.Errorf("postgres store: hook %q: %w", name, d.wrapClosed(err))
	}
	return h, nil
}

// Hooks lists every hook by name.
func (d *DB) Hooks(ctx context.Context) ([]store.Hook, error) {
	if err := d.check(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: list hooks: %w", err)
	}
	rows, err := d.pool.Query(ctx, `SELECT doc, created_at FROM hooks ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("postgres store: list hooks: %w", d.wrapClosed(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Hook, error) { return scanHook(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres store: list hooks: %w", d.wrapClosed(err))
	}
	return out, nil
}

// DeleteHook deletes a hook.
func (d *DB) DeleteHook(ctx context.Context, name string) error {
	return d.deleteNamed(ctx, "hooks", name)
}

func scanSchedule(s pgx.Row) (store.Schedule, error) {
	var doc []byte
	var sc store.Schedule
	var v, created int64
	if err := s.Scan(&doc, &v, &created); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return sc, store.ErrNotFound
		}
		return sc, err
	}
	if err := json.Unmarshal(doc, &sc); err != nil {
		return sc, fmt.Errorf("decode schedule: %w", err)
	}
	sc.Version, sc.CreatedAt = v, time.Unix(0, created)
	return sc, nil
}

func scanHook(s pgx.Row) (store.Hook, error) {
	var doc []byte
	var h store.Hook
	var created int64
	if err := s.Scan(&doc, &created); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
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
// unexpired (see store.ScheduleStore), in one statement that also deletes
// the expired records of other deliveries. Of two workers claiming one
// id, the insert of one waits for the other's and then finds it.
func (d *DB) ClaimDelivery(ctx context.Context, hook, id string, now, expires int64) (bool, error) {
	var claimed bool
	err := d.inStmt(ctx, func() error {
		tag, err := d.pool.Exec(ctx, `
WITH gone AS (DELETE FROM hook_deliveries WHERE expires <= $3 AND NOT (hook = $1 AND id = $2))
INSERT INTO hook_deliveries (hook, id, expires) VALUES ($1, $2, $4)
ON CONFLICT (hook, id) DO UPDATE SET expires = excluded.expires WHERE hook_deliveries.expires <= $3`, hook, id, now, expires)
		claimed = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres store: claim delivery of hook %q: %w", hook, err)
	}
	return claimed, nil
}

// ReleaseDelivery forgets a claimed delivery.
func (d *DB) ReleaseDelivery(ctx context.Context, hook, id string) error {
	err := d.inStmt(ctx, func() error {
		_, err := d.pool.Exec(ctx, `DELETE FROM hook_deliveries WHERE hook = $1 AND id = $2`, hook, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres store: release delivery of hook %q: %w", hook, err)
	}
	return nil
}
