package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/internal/runfilter"
	"github.com/skeinrun/skein/store"
)

// The namespace view's filters, batches, activity tasks, schedules,
// hooks and attributes (view.go says what a view is).

// scopeFilter returns f, written with local ids and names, as the store
// reads it for namespace ns: only ns's runs, its ids and names
// qualified. A local id or name that holds '/' is refused.
func scopeFilter(ns string, f store.RunFilter) (store.RunFilter, error) {
	q := func(what, s string) (string, error) {
		if s == "" {
			return "", nil
		}
		if strings.Contains(s, store.NamespaceSep) {
			return "", invalidf("filter: %s %q holds '/': ids and names hold no '/'", what, s)
		}
		return store.Qualify(ns, s), nil
	}
	var err error
	f.Namespace = ns
	for _, p := range []struct {
		what string
		s    *string
	}{{"parent", &f.Parent}, {"schedule", &f.Schedule}, {"hook", &f.Hook}, {"cursor", &f.After}} {
		if *p.s, err = q(p.what, *p.s); err != nil {
			return f, err
		}
	}
	ids := make([]string, len(f.IDs))
	for i, id := range f.IDs {
		if ids[i], err = q("run id", id); err != nil {
			return f, err
		}
	}
	f.IDs = ids
	conds := slices.Clone(f.Attrs)
	for i := range conds {
		if conds[i].Name, err = q("attribute", conds[i].Name); err != nil {
			return f, err
		}
	}
	f.Attrs = conds
	return f, nil
}

// scope is scopeFilter in the view's namespace.
func (v *view) scope(f store.RunFilter) (store.RunFilter, error) { return scopeFilter(v.ns, f) }

// ParseFilter parses a filter of the namespace: a module named in it is
// a module of the namespace. The filter keeps local ids and names (Runs
// and the batches scope it).
func (v *view) ParseFilter(ctx context.Context, where string, now time.Time) (store.RunFilter, error) {
	f, err := runfilter.Parse(where, now)
	if err != nil {
		return f, invalid(err)
	}
	if f.Module == "" {
		return f, nil
	}
	m, err := v.ownModule(ctx, f.Module)
	if err != nil {
		return f, invalidf("filter: module %q: no module of namespace %s has this name or hash", f.Module, v.ns)
	}
	f.Module = m.Hash
	return f, nil
}

// StartBatch starts a batch over the namespace's runs (Host.StartBatch):
// its id is qualified, and the worker that drives it scopes its filter
// by that id's namespace.
func (v *view) StartBatch(ctx context.Context, o BatchOptions) (store.BatchJob, error) {
	if o.Where == "" {
		return store.BatchJob{}, invalidf("a batch needs a filter (where): an empty one would select every run")
	}
	f, err := v.ParseFilter(ctx, o.Where, time.Now())
	if err != nil {
		return store.BatchJob{}, err
	}
	if _, err := v.scope(f); err != nil {
		return store.BatchJob{}, err
	}
	j, err := v.h.startBatch(ctx, o, f, store.NamespacePrefix(v.ns))
	return v.batch(j), err
}

// DryRunBatch lists the first runs of the namespace a batch would act on.
func (v *view) DryRunBatch(ctx context.Context, where string, limit int) ([]store.Run, bool, error) {
	if where == "" {
		return nil, false, invalidf("a batch needs a filter (where): an empty one would select every run")
	}
	f, err := v.ParseFilter(ctx, where, time.Now())
	if err != nil {
		return nil, false, err
	}
	if f, err = v.scope(f); err != nil {
		return nil, false, err
	}
	rs, more, err := v.h.dryRun(ctx, f, limit)
	return v.runs(rs), more, err
}

// batch returns j with its ids local.
func (v *view) batch(j store.BatchJob) store.BatchJob {
	j.ID, j.Cursor = v.local(j.ID), v.local(j.Cursor)
	errs := make([]store.BatchError, len(j.Errors))
	for i, e := range j.Errors {
		errs[i] = store.BatchError{RunID: v.local(e.RunID), Error: e.Error}
	}
	j.Errors = errs
	return j
}

// Batch returns a batch of the namespace.
func (v *view) Batch(ctx context.Context, id string) (store.BatchJob, error) {
	q, err := v.q("batch", id, false)
	if err != nil {
		return store.BatchJob{}, err
	}
	j, err := v.h.Batch(ctx, q)
	return v.batch(j), err
}

// Batches lists the namespace's newest batches, up to limit (<= 0: all).
func (v *view) Batches(ctx context.Context, limit int) ([]store.BatchJob, error) {
	js, err := v.h.Batches(ctx, 0)
	if err != nil {
		return nil, err
	}
	var out []store.BatchJob
	for _, j := range js {
		if v.mine(j.ID) && (limit <= 0 || len(out) < limit) {
			out = append(out, v.batch(j))
		}
	}
	return out, nil
}

// CancelBatch requests a batch's cancellation (Host.CancelBatch).
func (v *view) CancelBatch(ctx context.Context, id, reason string) (store.BatchJob, error) {
	q, err := v.q("batch", id, false)
	if err != nil {
		return store.BatchJob{}, err
	}
	j, err := v.h.CancelBatch(ctx, q, reason)
	return v.batch(j), err
}

// task returns t with its ids and name local.
func (v *view) task(t store.Task) store.Task {
	t.RunID, t.Name = v.local(t.RunID), v.local(t.Name)
	return t
}

// ClaimTasks claims tasks of the namespace's runs for the activity names
// given (local; the tasks are named in their run's namespace).
func (v *view) ClaimTasks(ctx context.Context, o ClaimOptions) ([]store.Task, error) {
	names := make([]string, len(o.Names))
	for i, n := range o.Names {
		q, err := v.q("activity name", n, true)
		if err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		names[i] = q
	}
	o.Names = names
	ts, err := v.h.ClaimTasks(ctx, o)
	for i := range ts {
		ts[i] = v.task(ts[i])
	}
	return ts, err
}

// ref qualifies a task reference.
func (v *view) ref(r TaskRef) (TaskRef, error) {
	q, err := v.q("task of run", r.RunID, false)
	r.RunID = q
	return r, err
}

// HeartbeatTask renews a task's lease (Host.HeartbeatTask).
func (v *view) HeartbeatTask(ctx context.Context, ref TaskRef, progress json.RawMessage) (store.Task, error) {
	r, err := v.ref(ref)
	if err != nil {
		return store.Task{}, err
	}
	t, err := v.h.HeartbeatTask(ctx, r, progress)
	return v.task(t), err
}

// CompleteTask records a task's result (Host.CompleteTask).
func (v *view) CompleteTask(ctx context.Context, ref TaskRef, value json.RawMessage) error {
	r, err := v.ref(ref)
	if err != nil {
		return err
	}
	return v.h.CompleteTask(ctx, r, value)
}

// FailTask records a task's failed attempt (Host.FailTask).
func (v *view) FailTask(ctx context.Context, ref TaskRef, msg string, nonRetryable bool) (bool, error) {
	r, err := v.ref(ref)
	if err != nil {
		return false, err
	}
	return v.h.FailTask(ctx, r, msg, nonRetryable)
}

// Tasks lists a run's activity tasks (Host.Tasks).
func (v *view) Tasks(ctx context.Context, runID string) ([]store.Task, error) {
	q, err := v.runID(runID)
	if err != nil {
		return nil, err
	}
	ts, err := v.h.Tasks(ctx, q)
	for i := range ts {
		ts[i] = v.task(ts[i])
	}
	return ts, err
}

// schedule returns si with its names and ids local.
func (v *view) schedule(si ScheduleInfo) ScheduleInfo {
	si.Name, si.Module, si.LastRun = v.local(si.Name), v.local(si.Module), v.local(si.LastRun)
	return si
}

// CreateSchedule stores a schedule of the namespace (Host.CreateSchedule).
func (v *view) CreateSchedule(ctx context.Context, o ScheduleOptions) (ScheduleInfo, error) {
	var err error
	if o.Name, err = v.q("schedule name", o.Name, true); err != nil {
		return ScheduleInfo{}, fmt.Errorf("create schedule: %w", err)
	}
	if o.Module, err = v.moduleRef(ctx, o.Module); err != nil {
		return ScheduleInfo{}, fmt.Errorf("create schedule %s: %w", v.local(o.Name), err)
	}
	si, err := v.h.CreateSchedule(ctx, o)
	return v.schedule(si), err
}

// onSchedule calls f with the qualified name of a schedule of the
// namespace.
func (v *view) onSchedule(name string, f func(q string) (ScheduleInfo, error)) (ScheduleInfo, error) {
	q, err := v.q("schedule", name, false)
	if err != nil {
		return ScheduleInfo{}, err
	}
	si, err := f(q)
	return v.schedule(si), err
}

// Schedule returns a schedule of the namespace.
func (v *view) Schedule(ctx context.Context, name string) (ScheduleInfo, error) {
	return v.onSchedule(name, func(q string) (ScheduleInfo, error) { return v.h.Schedule(ctx, q) })
}

// PauseSchedule pauses a schedule (Host.PauseSchedule).
func (v *view) PauseSchedule(ctx context.Context, name string) (ScheduleInfo, error) {
	return v.onSchedule(name, func(q string) (ScheduleInfo, error) { return v.h.PauseSchedule(ctx, q) })
}

// ResumeSchedule resumes a schedule (Host.ResumeSchedule).
func (v *view) ResumeSchedule(ctx context.Context, name string) (ScheduleInfo, error) {
	return v.onSchedule(name, func(q string) (ScheduleInfo, error) { return v.h.ResumeSchedule(ctx, q) })
}

// Schedules lists the namespace's schedules.
func (v *view) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	ss, err := v.h.Schedules(ctx)
	var out []ScheduleInfo
	for _, si := range ss {
		if v.mine(si.Name) {
			out = append(out, v.schedule(si))
		}
	}
	return out, err
}

// DeleteSchedule deletes a schedule (Host.DeleteSchedule).
func (v *view) DeleteSchedule(ctx context.Context, name string) error {
	q, err := v.q("schedule", name, false)
	if err != nil {
		return err
	}
	return v.h.DeleteSchedule(ctx, q)
}

// TriggerSchedule starts a schedule's run now (Host.TriggerSchedule).
func (v *view) TriggerSchedule(ctx context.Context, name string) (store.Run, error) {
	q, err := v.q("schedule", name, false)
	if err != nil {
		return store.Run{}, err
	}
	r, err := v.h.TriggerSchedule(ctx, q)
	return v.run(r), err
}

// hook returns hk with its names local.
func (v *view) hook(hk store.Hook) store.Hook {
	hk.Name, hk.Module = v.local(hk.Name), v.local(hk.Module)
	return hk
}

// CreateHook stores a webhook of the namespace (Host.CreateHook).
func (v *view) CreateHook(ctx context.Context, o HookOptions) (store.Hook, error) {
	var err error
	if o.Name, err = v.q("hook name", o.Name, true); err != nil {
		return store.Hook{}, fmt.Errorf("create hook: %w", err)
	}
	if o.Module, err = v.moduleRef(ctx, o.Module); err != nil {
		return store.Hook{}, fmt.Errorf("create hook %s: %w", v.local(o.Name), err)
	}
	hk, err := v.h.CreateHook(ctx, o)
	return v.hook(hk), err
}

// Hook returns a webhook of the namespace.
func (v *view) Hook(ctx context.Context, name string) (store.Hook, error) {
	q, err := v.q("hook", name, false)
	if err != nil {
		return store.Hook{}, err
	}
	hk, err := v.h.Hook(ctx, q)
	return v.hook(hk), err
}

// Hooks lists the namespace's webhooks.
func (v *view) Hooks(ctx context.Context) ([]store.Hook, error) {
	hs, err := v.h.Hooks(ctx)
	var out []store.Hook
	for _, hk := range hs {
		if v.mine(hk.Name) {
			out = append(out, v.hook(hk))
		}
	}
	return out, err
}

// DeleteHook deletes a webhook (Host.DeleteHook).
func (v *view) DeleteHook(ctx context.Context, name string) error {
	q, err := v.q("hook", name, false)
	if err != nil {
		return err
	}
	return v.h.DeleteHook(ctx, q)
}

// Deliver hands a delivery to a webhook of the namespace (Host.Deliver).
func (v *view) Deliver(ctx context.Context, name string, d Delivery) (store.Run, bool, error) {
	q, err := v.q("hook", name, false)
	if err != nil {
		return store.Run{}, false, err
	}
	r, created, err := v.h.Deliver(ctx, q, d)
	return v.run(r), created, err
}

// CreateAttribute declares a search attribute of the namespace.
func (v *view) CreateAttribute(ctx context.Context, name string, t store.AttrType) (store.AttrDecl, error) {
	q, err := v.q("attribute", name, true)
	if err != nil {
		return store.AttrDecl{}, fmt.Errorf("create attribute: %w", err)
	}
	d, err := v.h.CreateAttribute(ctx, q, t)
	d.Name = v.local(d.Name)
	return d, err
}

// Attributes lists the namespace's declared attributes.
func (v *view) Attributes(ctx context.Context) ([]store.AttrDecl, error) {
	ds, err := v.h.Attributes(ctx)
	var out []store.AttrDecl
	for _, d := range ds {
		if v.mine(d.Name) {
			d.Name = v.local(d.Name)
			out = append(out, d)
		}
	}
	return out, err
}

// DeleteAttribute deletes a declaration of the namespace.
func (v *view) DeleteAttribute(ctx context.Context, name string) error {
	q, err := v.q("attribute", name, false)
	if err != nil {
		return err
	}
	return v.h.DeleteAttribute(ctx, q)
}

// RunAttributes returns the attributes of runs of the namespace, by local
// run id and name.
func (v *view) RunAttributes(ctx context.Context, ids ...string) (map[string]map[string]any, error) {
	qs := make([]string, 0, len(ids))
	for _, id := range ids {
		if q, err := v.runID(id); err == nil {
			qs = append(qs, q)
		}
	}
	m, err := v.h.RunAttributes(ctx, qs...)
	out := make(map[string]map[string]any, len(m))
	for id, vs := range m {
		out[v.local(id)] = v.localKeys(vs)
	}
	return out, err
}
