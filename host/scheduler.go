package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/host/internal/cron"

	"github.com/skeinrun/skein/store"
)

// The scheduler: a loop that Work runs beside its workers. Each worker
// computes the due slots of every schedule from what is stored, decides
// what each slot does (start, skip, buffer), records that decision with a
// conditional update of the schedule (store.UpdateSchedule: one worker
// wins each step, the others reread), and only then creates the slot's
// run, whose id is derived from the schedule and the slot
// (ScheduleRunID). A worker that dies between the two leaves a schedule
// whose latest started slot has no run: the next step of any worker
// creates it. A run id is created once, so a slot starts one run however
// many workers fire it.

// schedulePoll bounds how long the scheduler sleeps between looks at the
// stored schedules (schedules created, paused or advanced elsewhere).
const schedulePoll = time.Second

// Bounds on the work of one look at one schedule: the steps taken
// (slots started, skipped or buffered) and the slots counted as missed
// in one step. What is left is done at the next look, at once.
const (
	maxScheduleSteps = 100
)

// runSchedules starts the runs of due schedule slots until ctx ends.
func (h *Host) runSchedules(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	var failing time.Time // when the last failure was logged
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, err := h.scheduleTick(ctx, time.Now())
		if ctx.Err() != nil {
			return
		}
		if err != nil && time.Since(failing) >= time.Minute { // one line a minute while the store is out
			h.log.Error("scheduler: cannot read the schedules; trying again every second", "err", err)
			failing = time.Now()
		}
		wait := schedulePoll
		if !next.IsZero() {
			wait = min(wait, time.Until(next))
		}
		t.Reset(max(wait, 0))
	}
}

// scheduleTick handles the due slots of every schedule and returns the
// earliest next slot (zero: none known).
func (h *Host) scheduleTick(ctx context.Context, now time.Time) (time.Time, error) {
	scs, err := h.cfg.Store.Schedules(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("scheduler: list schedules: %w", err)
	}
	defer h.specs.Prune()
	var earliest time.Time
	for _, sc := range scs {
		next, err := h.driveSchedule(ctx, sc, now)
		if err != nil {
			if ctx.Err() != nil {
				return earliest, nil
			}
			h.log.Warn("scheduler: schedule step failed; it is tried again", "schedule", sc.Name, "err", err)
			continue
		}
		if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
			earliest = next
		}
	}
	return earliest, nil
}

// driveSchedule takes the steps of one schedule that are due at now and
// returns when its next slot is due (now if steps are left).
func (h *Host) driveSchedule(ctx context.Context, sc store.Schedule, now time.Time) (time.Time, error) {
	spec, loc, err := h.specs.Get(sc.Cron, sc.Timezone)
	if err != nil {
		// Stored schedules were checked, but a time zone database may
		// differ, or the schedule predates a rule (MaxCronLen). It is
		// logged once; the schedule starts nothing.
		if h.specs.ReportOnce(sc.Cron, sc.Timezone) {
			return time.Time{}, fmt.Errorf("%w; the schedule starts no runs: delete it and create it anew", err)
		}
		return time.Time{}, nil
	}
	for range maxScheduleSteps {
		if sc.Paused {
			return time.Time{}, nil
		}
		busy, err := h.lastSlotBusy(ctx, sc, cron.NeedsStatus(sc, spec, loc, now))
		if err != nil {
			return time.Time{}, err
		}
		u, fire, next := cron.Step(sc, spec, loc, now, busy)
		if !next.IsZero() {
			return next, nil
		}
		stored, err := h.cfg.Store.UpdateSchedule(ctx, u)
		if errors.Is(err, store.ErrConflict) { // another worker took this step
			if sc, err = h.cfg.Store.Schedule(ctx, sc.Name); errors.Is(err, store.ErrNotFound) {
				return time.Time{}, nil
			}
			if err != nil {
				return time.Time{}, err
			}
			continue
		}
		if errors.Is(err, store.ErrNotFound) { // deleted
			return time.Time{}, nil
		}
		if err != nil {
			return time.Time{}, err
		}
		sc = stored
		if fire != 0 {
			// The slot is committed as fired: its run is created even if
			// the worker is stopping meanwhile, so a graceful stop leaves
			// no fired slot without its run (a crash here is mended by
			// lastSlotBusy at the next look).
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slotRunTimeout)
			_, err := h.fireSlot(fctx, sc, fire)
			cancel()
			if err != nil {
				return time.Time{}, err
			}
		}
	}
	return now, nil
}

// lastSlotBusy reports whether the run of sc's latest started slot has
// not ended (when need is false it may answer false without reading it).
// A started slot without its run (its worker died between the decision
// and the start) gets its run now; a slot whose run was seen is
// remembered, so that a look at a schedule with nothing due reads no run.
func (h *Host) lastSlotBusy(ctx context.Context, sc store.Schedule, need bool) (bool, error) {
	if sc.LastFired == 0 {
		return false, nil
	}
	h.mu.Lock()
	seen := h.slotRuns[sc.Name] == sc.LastFired
	h.mu.Unlock()
	if seen && !need {
		return false, nil
	}
	r, err := h.cfg.Store.Run(ctx, ScheduleRunID(sc.Name, time.Unix(0, sc.LastFired)))
	if errors.Is(err, store.ErrNotFound) {
		r, err = h.fireSlot(ctx, sc, sc.LastFired)
	}
	if err != nil {
		return false, err
	}
	h.mu.Lock()
	if h.slotRuns == nil {
		h.slotRuns = map[string]int64{}
	}
	h.slotRuns[sc.Name] = sc.LastFired
	h.mu.Unlock()
	return !r.Status.Terminal(), nil
}

// slotRunTimeout bounds the creation of a fired slot's run after the
// worker was told to stop.
const slotRunTimeout = 10 * time.Second

// fireSlot creates the run of a schedule's slot, unless it exists. The
// run's virtual time starts at the slot (skein.Now in the workflow).
func (h *Host) fireSlot(ctx context.Context, sc store.Schedule, slot int64) (store.Run, error) {
	at := time.Unix(0, slot)
	id := ScheduleRunID(sc.Name, at)
	m, err := h.modules.Info(ctx, sc.Module)
	if err != nil {
		return store.Run{}, fmt.Errorf("schedule %s: start %s: module %q: %w", sc.Name, id, sc.Module, err)
	}
	r, created, err := h.newRun(ctx, store.Run{ID: id, ModuleHash: m.Hash, Workflow: sc.Workflow, Input: sc.Input, StartTime: slot})
	if err != nil {
		return store.Run{}, fmt.Errorf("schedule %s: start %s: %w", sc.Name, id, err)
	}
	if created {
		h.log.Info("scheduler: started the run of a slot", "schedule", sc.Name, "run", id, "slot", at.UTC())
		h.signal()
	}
	return r, nil
}
