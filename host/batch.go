package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/internal/runfilter"
	"github.com/skeinrun/skein/store"
)

// Batches: one action applied to every run a filter (the language of
// internal/runfilter) selects, as a durable job (store.BatchJob) that a
// worker drives by lease (batchrun.go). The selection is fixed when the
// batch is created: it acts on runs created before it, walked by id,
// each checked against the filter when the walk reaches it (docs/operations.md,
// "Bulk actions").

// Batch rates: the default and the most runs a batch acts on per second.
const (
	DefaultBatchRate = 50
	MaxBatchRate     = 1000
	MinBatchRate     = 0.01
	// MaxDryRun is the most runs a dry run lists.
	MaxDryRun = 1000
)

// BatchOptions is a batch to start.
type BatchOptions struct {
	Where  string          // the filter; not empty
	Action string          // a batch action's name (docs/operations.md, "Bulk actions")
	Args   json.RawMessage // the action's arguments (a JSON object), or empty
	Rate   float64         // runs per second; 0: DefaultBatchRate
}

// ParseFilter parses a filter of the language (internal/runfilter) at
// now and resolves its module term, a name or a hash, to a hash: a name
// to the module it points at now, a hash no module has to itself (its
// runs may remain). A bad filter is ErrInvalid, naming the offset, the
// term and the rule.
func (h *Host) ParseFilter(ctx context.Context, where string, now time.Time) (store.RunFilter, error) {
	f, err := runfilter.Parse(where, now)
	if err != nil {
		return f, invalid(err)
	}
	if f.Module == "" {
		return f, nil
	}
	m, err := h.cfg.Store.ModuleInfo(ctx, f.Module)
	switch {
	case err == nil:
		f.Module = m.Hash
	case !errors.Is(err, store.ErrNotFound):
		return f, fmt.Errorf("filter: module %q: %w", f.Module, err)
	case !IsModuleHash(f.Module):
		return f, invalidf("filter: module %q: no module has this name or hash", f.Module)
	}
	return f, nil
}

// IsModuleHash reports whether s is written as a module hash: 64
// lowercase hex digits.
func IsModuleHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// StartBatch stores a batch job; a worker drives it. A bad filter,
// action, arguments or rate is ErrInvalid, naming the rule.
func (h *Host) StartBatch(ctx context.Context, o BatchOptions) (store.BatchJob, error) {
	now := time.Now()
	if o.Where == "" {
		return store.BatchJob{}, invalidf("a batch needs a filter (where): an empty one would select every run")
	}
	f, err := h.ParseFilter(ctx, o.Where, now)
	if err != nil {
		return store.BatchJob{}, err
	}
	return h.startBatch(ctx, o, f, "")
}

// startBatch is StartBatch of the parsed filter f, with an id that
// starts with prefix (a namespace's: the batch acts on its runs only).
func (h *Host) startBatch(ctx context.Context, o BatchOptions, f store.RunFilter, prefix string) (store.BatchJob, error) {
	now := time.Now()
	a, ok := h.batchAction(o.Action)
	if !ok {
		return store.BatchJob{}, invalidf("batch action %q: want one of %s", o.Action, batchActionNames())
	}
	if a.Check != nil {
		if err := a.Check(o.Args); err != nil {
			return store.BatchJob{}, invalidf("batch action %s: the arguments: %w", o.Action, err)
		}
	}
	if o.Rate == 0 {
		o.Rate = DefaultBatchRate
	}
	if !(o.Rate >= MinBatchRate && o.Rate <= MaxBatchRate) {
		return store.BatchJob{}, invalidf("batch rate %v: want from %v to %v runs per second", o.Rate, MinBatchRate, MaxBatchRate)
	}
	j := store.BatchJob{ID: prefix + "batch-" + now.UTC().Format("20060102T150405Z") + "-" + randomHex(8), Where: store.CleanText(o.Where),
		Filter: runfilter.Format(f), Action: o.Action, Args: o.Args, Rate: o.Rate, Before: now.UnixNano(), CreatedAt: now}
	j, err := h.cfg.Store.CreateBatchJob(ctx, j)
	if err != nil {
		return store.BatchJob{}, fmt.Errorf("start a batch: %w", err)
	}
	return j, nil
}

// DryRunBatch lists the first runs (up to limit, at most MaxDryRun) that
// a batch with this filter would act on now, and whether there are more.
// It acts on none.
func (h *Host) DryRunBatch(ctx context.Context, where string, limit int) (runs []store.Run, more bool, err error) {
	now := time.Now()
	if where == "" {
		return nil, false, invalidf("a batch needs a filter (where): an empty one would select every run")
	}
	f, err := h.ParseFilter(ctx, where, now)
	if err != nil {
		return nil, false, err
	}
	if f, err = scopeFilter(store.DefaultNamespace, f); err != nil { // as the batch's id is
		return nil, false, err
	}
	return h.dryRun(ctx, f, limit)
}

// dryRun is DryRunBatch of the parsed filter f.
func (h *Host) dryRun(ctx context.Context, f store.RunFilter, limit int) (runs []store.Run, more bool, err error) {
	now := time.Now()
	if limit <= 0 || limit > MaxDryRun {
		limit = MaxDryRun
	}
	f.CreatedTo = batchBound(f.CreatedTo, now.UnixNano())
	f.Limit = limit + 1
	rs, err := h.cfg.Store.Runs(ctx, f)
	if err != nil {
		return nil, false, fmt.Errorf("dry run: %w", err)
	}
	if len(rs) > limit {
		return rs[:limit], true, nil
	}
	return rs, false, nil
}

// batchBound is the upper bound of the creation times a batch acts on:
// the filter's own, or the batch's creation if earlier.
func batchBound(createdTo, before int64) int64 {
	if createdTo != 0 && createdTo < before {
		return createdTo
	}
	return before
}

// Batch returns a batch job.
func (h *Host) Batch(ctx context.Context, id string) (store.BatchJob, error) {
	return h.cfg.Store.BatchJob(ctx, id)
}

// Batches lists up to limit batch jobs, newest first.
func (h *Host) Batches(ctx context.Context, limit int) ([]store.BatchJob, error) {
	return h.cfg.Store.BatchJobs(ctx, limit)
}

// CancelBatch requests a batch's cancellation: the worker that drives
// it stops before its next run. The runs acted on stay as they are. A
// batch that ended is returned unchanged.
func (h *Host) CancelBatch(ctx context.Context, id, reason string) (store.BatchJob, error) {
	return h.cfg.Store.CancelBatchJob(ctx, id, store.CleanText(reason))
}
