package host

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// Retention (docs/operations.md, "Retention"): Work's pruner deletes the
// runs that ended more than Config.Retention ago, with everything that
// belongs to them, a batch (one short transaction) at a time; Prune does
// the same by hand and DeleteRun deletes one run. The rules of what is
// kept are the store's (store.PruneStore).

// DefaultRetention is Config.Retention's default: 30 days.
const DefaultRetention = 30 * 24 * time.Hour

// DefaultPruneEvery is Config.PruneEvery's default.
const DefaultPruneEvery = 5 * time.Minute

// maxPruneIDs bounds the run ids a PruneReport lists.
const maxPruneIDs = 100

// PruneReport is what Prune did (or, for a dry run, would do).
type PruneReport struct {
	Before  time.Time // the horizon: runs that ended before it
	DryRun  bool
	Runs    int      // runs deleted (dry run: that would be)
	Batches int      // transactions it took (a dry run reads in one)
	IDs     []string // the first 100 of those runs, in the order they went
}

// Prune deletes the runs that ended before the horizon and that nothing
// live needs (store.PruneStore), store.DefaultPruneBatch at a time, each
// batch one transaction, until none is left or ctx ends; with dryRun it
// deletes nothing and counts what it would delete. Work's pruner calls
// it; `skein runs prune` and POST /v1/runs/prune too.
func (h *Host) Prune(ctx context.Context, before time.Time, dryRun bool) (PruneReport, error) {
	return h.prune(ctx, "", before, dryRun)
}

// prune is Prune of the runs of namespace ns ("": every namespace).
func (h *Host) prune(ctx context.Context, ns string, before time.Time, dryRun bool) (PruneReport, error) {
	rep := PruneReport{Before: before, DryRun: dryRun}
	if dryRun {
		res, err := h.cfg.Store.PruneRuns(ctx, ns, before.UnixNano(), 0, true)
		if err != nil {
			return rep, fmt.Errorf("prune runs ended before %s (dry run): %w", before.UTC().Format(time.RFC3339), err)
		}
		rep.Runs, rep.Batches = len(res.IDs), 1
		rep.IDs = res.IDs[:min(len(res.IDs), maxPruneIDs)]
		return rep, nil
	}
	for {
		res, err := h.cfg.Store.PruneRuns(ctx, ns, before.UnixNano(), store.DefaultPruneBatch, false)
		if err != nil {
			return rep, fmt.Errorf("prune runs ended before %s (after %d runs in %d batches): %w",
				before.UTC().Format(time.RFC3339), rep.Runs, rep.Batches, err)
		}
		rep.Batches++
		rep.Runs += len(res.IDs)
		rep.IDs = append(rep.IDs, res.IDs[:min(len(res.IDs), maxPruneIDs-len(rep.IDs))]...)
		for _, id := range res.IDs {
			h.metrics.Of(id).RunsPruned.Add(1)
		}
		if !res.More || len(res.IDs) == 0 || ctx.Err() != nil {
			return rep, nil
		}
	}
}

// DeleteRun deletes one run that ended, with everything that belongs to
// it. It refuses (a *store.KeptError, wrapping store.ErrRunNeeded and
// ErrConflict) a run that has not ended, a child run whose parent has
// not, a parent with a child that has not, a run of a continue-as-new
// chain whose last run has not, and the run of a schedule's latest slot;
// an unknown run is ErrNotFound.
func (h *Host) DeleteRun(ctx context.Context, id string) error {
	err := h.cfg.Store.DeleteRun(ctx, id)
	var kept *store.KeptError
	switch {
	case errors.As(err, &kept):
		return fmt.Errorf("delete run: %w", &conflictKept{kept})
	case err != nil:
		return fmt.Errorf("delete run %s: %w", id, err)
	}
	h.metrics.Of(id).RunsPruned.Add(1)
	h.log.Info("retention: deleted a run", "run", id)
	return nil
}

// conflictKept is a *store.KeptError that is also ErrConflict (the HTTP
// API answers 409).
type conflictKept struct{ *store.KeptError }

// Unwrap returns the KeptError and ErrConflict.
func (e *conflictKept) Unwrap() []error { return []error{e.KeptError, ErrConflict} }

// runPruner prunes every Config.PruneEvery (jittered by up to a fifth
// either way, so that workers sharing a store spread their prunes) the
// runs that ended more than Config.Retention ago by Config.Clock, until
// ctx ends. A negative Retention turns it off.
func (h *Host) runPruner(ctx context.Context) {
	every := h.cfg.PruneEvery
	t := time.NewTimer(jitter(every))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := h.pruneNamespaces(ctx); err != nil && ctx.Err() == nil {
			h.log.Error("retention: read the namespaces", "err", err)
		}
		if ctx.Err() != nil {
			return
		}
		t.Reset(jitter(every))
	}
}

// pruneNamespaces prunes each namespace by its retention: its own
// (store.Namespace.Retention), or Config.Retention where it keeps the
// server's; 0 and a negative period keep everything. A namespace
// without a record (an embedder's Host.In of one never created) is not
// pruned.
func (h *Host) pruneNamespaces(ctx context.Context) error {
	nss, err := h.cfg.Store.Namespaces(ctx)
	if err != nil {
		return err
	}
	for _, n := range nss {
		keep := n.Retention
		if keep == store.RetentionDefault {
			keep = h.cfg.Retention
		}
		if keep <= 0 {
			continue
		}
		before := h.cfg.Clock().Add(-keep)
		rep, err := h.prune(ctx, n.Name, before, false)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			h.log.Error("retention: prune", "namespace", n.Name, "before", before.UTC(), "pruned", rep.Runs, "err", err)
		case rep.Runs > 0:
			h.log.Info("retention: pruned ended runs", "namespace", n.Name, "runs", rep.Runs, "batches", rep.Batches,
				"before", before.UTC(), "retention", keep)
		}
	}
	return nil
}

// jitter returns d moved by a random amount of up to a fifth of it.
func jitter(d time.Duration) time.Duration {
	if d < 5 {
		return d
	}
	return d - d/5 + rand.N(2*d/5)
}

// retentionDefaults fills in the retention settings of cfg.
func retentionDefaults(cfg *Config) {
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.PruneEvery <= 0 {
		cfg.PruneEvery = DefaultPruneEvery
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
}

// ParseAge parses an age of retention: a Go duration ("720h", "90m") or
// a whole number of days ("30d"). It must not be negative.
func ParseAge(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		days, perr := strconv.Atoi(n)
		if perr != nil || days > math.MaxInt64/int(24*time.Hour) {
			return 0, fmt.Errorf("age %q: too many days", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("age %q: want a duration such as 720h or a number of days such as 30d", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("age %q: must not be negative", s)
	}
	return d, nil
}
