package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/host/internal/cron"

	"github.com/skeinrun/skein/store"
)

// Schedules start runs of a workflow at the slots of a cron expression
// (docs/schedules.md). This file is their API; scheduler.go is the loop,
// run by Work, that starts the runs.

// DefaultCatchup is how late a slot may still start when a schedule sets
// no catch-up window.
const DefaultCatchup = time.Minute

// MaxScheduleNameLen is the longest schedule or hook name.
const MaxScheduleNameLen = 64

// ScheduleOptions define a schedule.
type ScheduleOptions struct {
	Name     string          // letters, digits, - and _; at most MaxScheduleNameLen
	Cron     string          // "0 7 * * *", "*/10 * * * * *" (seconds first), "@daily"; at most MaxCronLen bytes
	Timezone string          // IANA name the cron is read in; default UTC
	Module   string          // module name or hash; a name starts its newest module at each slot
	Workflow string          // default: the module's only workflow
	Input    json.RawMessage // JSON; empty means null
	Overlap  store.Overlap   // default store.OverlapSkip
	// Catchup is how late a slot may still start (after downtime);
	// older slots are skipped and counted as missed. Default
	// DefaultCatchup.
	Catchup time.Duration
}

// ScheduleInfo is a schedule as the API shows it: what is stored, its
// next slots and the run of its latest started slot.
type ScheduleInfo struct {
	store.Schedule
	Next    []time.Time // the next slots (up to 3); none while paused
	LastRun string      // run id of the latest started slot; empty if none
	// LastStatus is LastRun's status (empty if none, or it is missing).
	LastStatus store.RunStatus
}

// ScheduleRunID returns the id of the run a schedule starts for a slot:
// "sched:{name}@{slot in UTC, RFC 3339}", e.g.
// "sched:digest@2026-12-01T07:00:00Z". Every worker derives the same id,
// and a run id is created once, so a slot starts at most one run however
// many workers fire it.
func ScheduleRunID(name string, slot time.Time) string {
	return store.ScheduleRunID(name, slot)
}

// validName checks a schedule or hook name, qualified by its namespace
// (store/namespace.go).
func validName(what, q string) error {
	ns, name := store.SplitQualified(q)
	if err := store.CheckNamespaceName(ns); err != nil {
		return invalidf("%s %q: %w", what, q, err)
	}
	if name == "" || len(name) > MaxScheduleNameLen {
		return invalidf("%s name %q: want 1 to %d characters", what, name, MaxScheduleNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return invalidf("%s name %q has %q at byte %d: a name is made of letters, digits, - and _", what, name, name[i:i+1], i)
		}
	}
	return nil
}

// workflowOf resolves a module reference and checks (or picks) its
// workflow.
func (h *Host) workflowOf(ctx context.Context, module, workflow string) (string, error) {
	m, err := h.modules.Info(ctx, module)
	if err != nil {
		return "", fmt.Errorf("module %q: %w", module, err)
	}
	if workflow == "" {
		if len(m.Workflows) != 1 {
			return "", invalidf("name the workflow: module %q registers %s", module, strings.Join(m.Workflows, ", "))
		}
		return m.Workflows[0], nil
	}
	if !slices.Contains(m.Workflows, workflow) {
		return "", invalidf("module %q has no workflow %q; it registers %s", module, workflow, strings.Join(m.Workflows, ", "))
	}
	return workflow, nil
}

// CreateSchedule stores a schedule; its first slot is the first one
// after now. A schedule of the same name existing fails with ErrConflict.
// Work starts its runs (scheduler.go).
func (h *Host) CreateSchedule(ctx context.Context, o ScheduleOptions) (ScheduleInfo, error) {
	sc, err := h.newSchedule(ctx, o)
	if err != nil {
		return ScheduleInfo{}, fmt.Errorf("create schedule: %w", err)
	}
	sc, err = h.cfg.Store.CreateSchedule(ctx, sc)
	if err != nil {
		return ScheduleInfo{}, fmt.Errorf("create schedule: %w", err)
	}
	h.signal()
	return h.scheduleInfo(ctx, sc), nil
}

// newSchedule validates o and returns the schedule to store.
func (h *Host) newSchedule(ctx context.Context, o ScheduleOptions) (store.Schedule, error) {
	if err := validName("schedule", o.Name); err != nil {
		return store.Schedule{}, err
	}
	if _, _, err := cron.Parse(o.Cron, o.Timezone); err != nil {
		return store.Schedule{}, invalid(err)
	}
	switch o.Overlap {
	case "":
		o.Overlap = store.OverlapSkip
	case store.OverlapSkip, store.OverlapBufferOne, store.OverlapAllow:
	default:
		return store.Schedule{}, invalidf("overlap %q: want skip, buffer-one or allow", o.Overlap)
	}
	switch {
	case o.Catchup < 0:
		return store.Schedule{}, invalidf("catch-up window %s is negative", o.Catchup)
	case o.Catchup == 0:
		o.Catchup = DefaultCatchup
	}
	wf, err := h.workflowOf(ctx, o.Module, o.Workflow)
	if err != nil {
		return store.Schedule{}, err
	}
	input, err := h.runInput(o.Input)
	if err != nil {
		return store.Schedule{}, err
	}
	m, err := h.modules.Info(ctx, o.Module)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("module %q: %w", o.Module, err)
	}
	if err := checkInput(m, wf, input); err != nil { // refused now, not at every firing
		return store.Schedule{}, err
	}
	now := time.Now()
	return store.Schedule{Name: o.Name, Cron: o.Cron, Timezone: o.Timezone, Module: o.Module, Workflow: wf, Input: input,
		Overlap: o.Overlap, Catchup: o.Catchup, LastSlot: now.UnixNano(), CreatedAt: now}, nil
}

// Schedule returns one schedule.
func (h *Host) Schedule(ctx context.Context, name string) (ScheduleInfo, error) {
	sc, err := h.cfg.Store.Schedule(ctx, name)
	if err != nil {
		return ScheduleInfo{}, err
	}
	return h.scheduleInfo(ctx, sc), nil
}

// Schedules lists every schedule by name.
func (h *Host) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	scs, err := h.cfg.Store.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ScheduleInfo, len(scs))
	for i, sc := range scs {
		out[i] = h.scheduleInfo(ctx, sc)
	}
	return out, nil
}

// scheduleInfo adds a schedule's next slots and latest run.
func (h *Host) scheduleInfo(ctx context.Context, sc store.Schedule) ScheduleInfo {
	in := ScheduleInfo{Schedule: sc}
	if spec, loc, err := h.specs.Get(sc.Cron, sc.Timezone); err == nil && !sc.Paused {
		t := time.Unix(0, max(sc.LastSlot, time.Now().UnixNano())).In(loc)
		for range 3 {
			if t = spec.Next(t); t.IsZero() {
				break
			}
			in.Next = append(in.Next, t)
		}
	}
	if sc.LastFired != 0 {
		in.LastRun = ScheduleRunID(sc.Name, time.Unix(0, sc.LastFired))
		if r, err := h.cfg.Store.Run(ctx, in.LastRun); err == nil {
			in.LastStatus = r.Status
		}
	}
	return in
}

// PauseSchedule stops a schedule from starting runs until ResumeSchedule.
func (h *Host) PauseSchedule(ctx context.Context, name string) (ScheduleInfo, error) {
	return h.editSchedule(ctx, name, func(sc *store.Schedule) { sc.Paused = true })
}

// ResumeSchedule lets a paused schedule start runs again, from the first
// slot after now: the slots of the pause are neither started nor counted.
func (h *Host) ResumeSchedule(ctx context.Context, name string) (ScheduleInfo, error) {
	return h.editSchedule(ctx, name, func(sc *store.Schedule) {
		if sc.Paused {
			sc.Paused = false
			sc.LastSlot = max(sc.LastSlot, time.Now().UnixNano())
		}
	})
}

// editSchedule applies edit to the stored schedule, again if a worker
// updated it in between.
func (h *Host) editSchedule(ctx context.Context, name string, edit func(*store.Schedule)) (ScheduleInfo, error) {
	for {
		sc, err := h.cfg.Store.Schedule(ctx, name)
		if err != nil {
			return ScheduleInfo{}, err
		}
		edit(&sc)
		sc, err = h.cfg.Store.UpdateSchedule(ctx, sc)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return ScheduleInfo{}, err
		}
		h.signal()
		return h.scheduleInfo(ctx, sc), nil
	}
}

// DeleteSchedule deletes a schedule; the runs it started stay.
func (h *Host) DeleteSchedule(ctx context.Context, name string) error {
	return h.cfg.Store.DeleteSchedule(ctx, name)
}

// TriggerSchedule starts a run of a schedule now, outside its slots and
// its overlap policy, with the id "sched:{name}@trigger-{UTC time}-{random}".
func (h *Host) TriggerSchedule(ctx context.Context, name string) (store.Run, error) {
	sc, err := h.cfg.Store.Schedule(ctx, name)
	if err != nil {
		return store.Run{}, err
	}
	var b [3]byte
	rand.Read(b[:])
	id := store.ScheduleRunIDPrefix(name) + "trigger-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	return h.Start(ctx, StartOptions{Module: sc.Module, Workflow: sc.Workflow, Input: sc.Input, ID: id, reserved: true})
}
