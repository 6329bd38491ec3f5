package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/internal/runfilter"
	"github.com/skeinrun/skein/store"
)

// The worker side of batches: Work claims one batch job at a time by
// lease (store.BatchJobStore) and drives it: counts what it selects,
// then walks the runs by id from the job's cursor, acting on each at
// most Rate times a second and saving the cursor and the progress after
// each run under the lease. A worker that dies leaves the job to the
// next claim once its lease expires; that worker goes on from the
// cursor, so a run recorded as acted on is never acted on again (only
// the one run in flight may be, which batchAction.Do allows for).

const (
	batchPoll      = time.Second // how often an idle worker looks for a batch
	batchPage      = 100         // runs read at a time
	batchCountPage = 1000        // runs read at a time when counting
)

// runBatches drives batch jobs until ctx ends.
func (h *Host) runBatches(ctx context.Context, owner string, ttl time.Duration) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		j, ok, err := h.cfg.Store.ClaimBatchJob(ctx, owner, time.Now().UnixNano(), ttl)
		switch {
		case err != nil && ctx.Err() == nil:
			h.log.Warn("batches: claim a batch", "err", err)
		case ok:
			if err := h.driveBatch(ctx, j, ttl); err != nil && ctx.Err() == nil {
				h.log.Warn("batches: drive", "batch", j.ID, "err", err)
			}
			t.Reset(0)
			continue
		}
		t.Reset(batchPoll)
	}
}

// batchDrive is one worker's drive of one batch job under its lease.
type batchDrive struct {
	h      *Host
	j      store.BatchJob
	f      store.RunFilter
	action batchAction
	ttl    time.Duration
}

// driveBatch drives j until it ends, its lease is lost or ctx ends.
func (h *Host) driveBatch(ctx context.Context, j store.BatchJob, ttl time.Duration) error {
	d := &batchDrive{h: h, j: j, ttl: ttl}
	a, ok := h.batchAction(j.Action)
	f, err := runfilter.Parse(j.Filter, j.CreatedAt)
	if err == nil {
		// The batch acts on the runs of its own namespace (viewlists.go).
		f, err = scopeFilter(store.NamespaceOf(j.ID), f)
	}
	switch {
	case !ok:
		return d.end(ctx, store.BatchFailed, fmt.Sprintf("this worker has no batch action %q", j.Action))
	case err != nil:
		return d.end(ctx, store.BatchFailed, fmt.Sprintf("the stored filter does not parse: %v", err))
	}
	d.action, d.f = a, f
	d.f.CreatedTo = batchBound(f.CreatedTo, j.Before)
	defer d.handOver(ctx)
	if j.Cancel != "" {
		return d.end(ctx, store.BatchCanceled, "")
	}
	if j.Cursor == "" && j.Selected == 0 {
		if err := d.count(ctx); err != nil {
			return err
		}
	}
	return d.walk(ctx)
}

// handOver, when the worker stops (ctx ended) with the job running,
// saves it with a lease that expires now, so that another worker takes
// it over at once rather than after the lease's TTL.
func (d *batchDrive) handOver(ctx context.Context) {
	if ctx.Err() == nil || d.j.Status != store.BatchRunning {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := d.h.cfg.Store.SaveBatchJob(sctx, d.j, time.Now().UnixNano()); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		d.h.log.Warn("batches: hand the batch over", "batch", d.j.ID, "err", err)
	}
}

// count sets Selected: the runs the filter selects before the first
// action.
func (d *batchDrive) count(ctx context.Context) error {
	f := d.f
	f.Limit = batchCountPage
	var n int64
	for {
		rs, err := d.h.cfg.Store.Runs(ctx, f)
		if err != nil {
			return d.readFailed(ctx, err)
		}
		n += int64(len(rs))
		if len(rs) < f.Limit {
			break
		}
		f.After = rs[len(rs)-1].ID
		if err := d.save(ctx); err != nil { // renews the lease
			return err
		}
	}
	d.j.Selected = n
	return d.save(ctx)
}

// readFailed ends the job if the store refuses its filter for good
// (ErrAttrsUnsupported), and otherwise returns err: the lease expires
// and a worker tries again.
func (d *batchDrive) readFailed(ctx context.Context, err error) error {
	if errors.Is(err, store.ErrAttrsUnsupported) {
		return d.end(ctx, store.BatchFailed, err.Error())
	}
	return fmt.Errorf("list runs: %w", err)
}

// walk acts on the selected runs from the cursor on, paced by the rate.
func (d *batchDrive) walk(ctx context.Context) error {
	interval := time.Duration(float64(time.Second) / d.j.Rate)
	var next time.Time // the earliest start of the next action
	for {
		f := d.f
		f.After, f.Limit = d.j.Cursor, batchPage
		rs, err := d.h.cfg.Store.Runs(ctx, f)
		if err != nil {
			return d.readFailed(ctx, err)
		}
		if len(rs) == 0 {
			return d.end(ctx, store.BatchDone, "")
		}
		for _, r := range rs {
			if err := d.wait(ctx, next); err != nil {
				return err
			}
			start := time.Now()
			next = start.Add(interval)
			if stop, err := d.act(ctx, r, start); stop || err != nil {
				return err
			}
		}
	}
}

// wait sleeps until t, renewing the lease on the way when the wait is
// long (a low rate).
func (d *batchDrive) wait(ctx context.Context, t time.Time) error {
	for {
		left := time.Until(t)
		if left <= 0 {
			return nil
		}
		step := min(left, d.ttl/3)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(step):
		}
		if step < left {
			if err := d.save(ctx); err != nil {
				return err
			}
		}
	}
}

// act applies the action to r and saves the progress; stop is true when
// the job was canceled meanwhile (and is now ended).
func (d *batchDrive) act(ctx context.Context, r store.Run, start time.Time) (stop bool, err error) {
	aerr := d.action.Do(ctx, d.h, r, d.j.Args)
	if ctx.Err() != nil {
		return true, ctx.Err() // not recorded: the next drive acts on r again
	}
	j := &d.j
	j.Cursor = r.ID
	if aerr != nil {
		j.Failed++
		if len(j.Errors) < store.MaxBatchErrors {
			j.Errors = append(j.Errors, store.BatchError{RunID: r.ID, Error: store.CleanText(aerr.Error())})
		}
	} else {
		j.Done++
	}
	if j.StartedAt == 0 {
		j.StartedAt = start.UnixNano()
	}
	j.ActedAt = start.UnixNano()
	if err := d.save(ctx); err != nil {
		return true, err
	}
	if j.Cancel != "" {
		return true, d.end(ctx, store.BatchCanceled, "")
	}
	return false, nil
}

// save writes the progress under the lease and renews it; the stored
// cancellation comes back with it.
func (d *batchDrive) save(ctx context.Context) error {
	saved, err := d.h.cfg.Store.SaveBatchJob(ctx, d.j, time.Now().Add(d.ttl).UnixNano())
	if err != nil {
		return fmt.Errorf("save the progress: %w", err)
	}
	d.j.Cancel, d.j.LeaseExpiry = saved.Cancel, saved.LeaseExpiry
	return nil
}

// end ends the job with status (and, for a job that failed, why).
func (d *batchDrive) end(ctx context.Context, status store.BatchJobStatus, why string) error {
	d.j.Status, d.j.EndedAt = status, time.Now().UnixNano()
	if why != "" && len(d.j.Errors) < store.MaxBatchErrors {
		d.j.Errors = append(d.j.Errors, store.BatchError{Error: store.CleanText(why)})
	}
	return d.save(ctx)
}
