package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// scheduleMaps holds the schedules and hooks, by name. Nil until the
// first of each.
type scheduleMaps struct {
	schedules  map[string]store.Schedule
	hooks      map[string]store.Hook
	deliveries map[deliveryID]int64 // claimed deliveries: when each expires (unix ns)
}

// deliveryID names a claimed delivery of a hook.
type deliveryID struct{ hook, id string }

// CreateSchedule stores a new schedule (see store.ScheduleStore).
func (s *Store) CreateSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	if err := sc.CheckTexts(); err != nil {
		return store.Schedule{}, fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Schedule{}, err
	}
	if _, ok := s.sched.schedules[sc.Name]; ok {
		return store.Schedule{}, fmt.Errorf("memory store: schedule %q exists: %w", sc.Name, store.ErrConflict)
	}
	if s.sched.schedules == nil {
		s.sched.schedules = map[string]store.Schedule{}
	}
	sc.Version = 1
	sc.CreatedAt = orNow(sc.CreatedAt, time.Now())
	sc.Input = slices.Clone(sc.Input)
	s.sched.schedules[sc.Name] = sc
	return copySchedule(sc), nil
}

// Schedule returns one schedule.
func (s *Store) Schedule(ctx context.Context, name string) (store.Schedule, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return store.Schedule{}, err
	}
	sc, ok := s.sched.schedules[name]
	if !ok {
		return store.Schedule{}, fmt.Errorf("memory store: schedule %q: %w", name, store.ErrNotFound)
	}
	return copySchedule(sc), nil
}

// Schedules lists every schedule by name.
func (s *Store) Schedules(ctx context.Context) ([]store.Schedule, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	out := make([]store.Schedule, 0, len(s.sched.schedules))
	for _, sc := range s.sched.schedules {
		out = append(out, copySchedule(sc))
	}
	slices.SortFunc(out, func(a, b store.Schedule) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateSchedule replaces a schedule if its version is still sc.Version.
func (s *Store) UpdateSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	if err := sc.CheckTexts(); err != nil {
		return store.Schedule{}, fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Schedule{}, err
	}
	old, ok := s.sched.schedules[sc.Name]
	if !ok {
		return store.Schedule{}, fmt.Errorf("memory store: update schedule %q: %w", sc.Name, store.ErrNotFound)
	}
	if old.Version != sc.Version {
		return store.Schedule{}, fmt.Errorf("memory store: update schedule %q: version %d is not the stored %d: %w", sc.Name, sc.Version, old.Version, store.ErrConflict)
	}
	sc.Version++
	sc.CreatedAt = old.CreatedAt
	sc.Input = slices.Clone(sc.Input)
	s.sched.schedules[sc.Name] = sc
	return copySchedule(sc), nil
}

// DeleteSchedule deletes a schedule.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if _, ok := s.sched.schedules[name]; !ok {
		return fmt.Errorf("memory store: delete schedule %q: %w", name, store.ErrNotFound)
	}
	delete(s.sched.schedules, name)
	return nil
}

// CreateHook stores a new hook.
func (s *Store) CreateHook(ctx context.Context, h store.Hook) (store.Hook, error) {
	if err := h.CheckTexts(); err != nil {
		return store.Hook{}, fmt.Errorf("memory store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Hook{}, err
	}
	if _, ok := s.sched.hooks[h.Name]; ok {
		return store.Hook{}, fmt.Errorf("memory store: hook %q exists: %w", h.Name, store.ErrConflict)
	}
	if s.sched.hooks == nil {
		s.sched.hooks = map[string]store.Hook{}
	}
	h.CreatedAt = orNow(h.CreatedAt, time.Now())
	h.KeepHeaders = slices.Clone(h.KeepHeaders)
	s.sched.hooks[h.Name] = h
	return copyHook(h), nil
}

// Hook returns one hook.
func (s *Store) Hook(ctx context.Context, name string) (store.Hook, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return store.Hook{}, err
	}
	h, ok := s.sched.hooks[name]
	if !ok {
		return store.Hook{}, fmt.Errorf("memory store: hook %q: %w", name, store.ErrNotFound)
	}
	return copyHook(h), nil
}

// Hooks lists every hook by name.
func (s *Store) Hooks(ctx context.Context) ([]store.Hook, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	out := make([]store.Hook, 0, len(s.sched.hooks))
	for _, h := range s.sched.hooks {
		out = append(out, copyHook(h))
	}
	slices.SortFunc(out, func(a, b store.Hook) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteHook deletes a hook.
func (s *Store) DeleteHook(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if _, ok := s.sched.hooks[name]; !ok {
		return fmt.Errorf("memory store: delete hook %q: %w", name, store.ErrNotFound)
	}
	delete(s.sched.hooks, name)
	return nil
}

// ClaimDelivery records a delivery of a hook unless it is recorded and
// unexpired (see store.ScheduleStore).
func (s *Store) ClaimDelivery(ctx context.Context, hook, id string, now, expires int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return false, fmt.Errorf("memory store: claim delivery of hook %q: %w", hook, err)
	}
	for k, exp := range s.sched.deliveries {
		if exp <= now {
			delete(s.sched.deliveries, k)
		}
	}
	k := deliveryID{hook, id}
	if _, ok := s.sched.deliveries[k]; ok {
		return false, nil
	}
	if s.sched.deliveries == nil {
		s.sched.deliveries = map[deliveryID]int64{}
	}
	s.sched.deliveries[k] = expires
	return true, nil
}

// ReleaseDelivery forgets a claimed delivery.
func (s *Store) ReleaseDelivery(ctx context.Context, hook, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory store: release delivery of hook %q: %w", hook, err)
	}
	delete(s.sched.deliveries, deliveryID{hook, id})
	return nil
}

func copyHook(h store.Hook) store.Hook {
	h.KeepHeaders = slices.Clone(h.KeepHeaders)
	return h
}

func copySchedule(sc store.Schedule) store.Schedule {
	sc.Input = slices.Clone(sc.Input)
	return sc
}
