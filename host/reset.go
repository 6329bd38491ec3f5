package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// ResetOptions say what Reset makes of a run.
type ResetOptions struct {
	RunID string // the run to reset
	ToKey string // the key of the settled op to execute again, and everything that follows it
	// Module is the module the new run executes (a name or a hash);
	// empty: the run's own.
	Module string
	// Input is the new run's input (JSON); nil: the run's own. The kept
	// records answer their ops whatever the input.
	Input json.RawMessage
	// NewID is the new run's id; empty: ResetRunID(RunID, n) with the
	// lowest n not taken.
	NewID string
}

// errReset is the cause given to this host's drive of a run that was
// reset: like a lost lease, the drive stops and records nothing more.
var errReset = fmt.Errorf("the run was reset: %w", store.ErrLeaseLost)

// Reset makes a new run from a prefix of run o.RunID's journal and marks
// the run reset (docs/api.md "Resetting a run"): the new run keeps every
// record that cannot depend on the op at o.ToKey (resetJournal) and
// executes from there, on o.Module if given, with o.Input if given. In
// one store commit the new run is created (pending: a worker drives it)
// and the run gets the status reset with a link to it; the new run links
// back (Run.ResetFrom, Run.ResetKey). A run still executing stops at its
// next commit or lease renewal and records nothing more; its unended
// child runs get its parent close policy, its activity tasks are
// canceled. It returns the new run. Errors: ErrNotFound for an unknown
// run or module; ErrInvalid for a key not recorded, pending or
// orphaned, a child run, input that is not JSON or does not fit the
// workflow's schema, a bad new id; ErrConflict for a run that continued
// or was reset already (store.ErrResetRefused) or a new id taken.
func (h *Host) Reset(ctx context.Context, o ResetOptions) (store.Run, error) {
	run, err := h.cfg.Store.Run(ctx, o.RunID)
	if err != nil {
		return store.Run{}, fmt.Errorf("reset %s: %w", o.RunID, err)
	}
	if run.Parent != "" {
		return store.Run{}, invalidf("reset %s: it is a child run of %s, which waits for it by its id: reset the parent to the child's op instead", run.ID, run.Parent)
	}
	if !run.Status.CanReset() {
		return store.Run{}, fmt.Errorf("reset: %w", store.ResetRefusedError(run))
	}
	outs, err := h.cfg.Store.Outcomes(ctx, run.ID)
	if err != nil {
		return store.Run{}, fmt.Errorf("reset %s: %w", run.ID, err)
	}
	kept, _, err := resetJournal(run.ID, outs, o.ToKey)
	if err != nil {
		return store.Run{}, err
	}
	next, err := h.resetRun(ctx, run, o)
	if err != nil {
		return store.Run{}, err
	}
	b, err := h.resetBatch(ctx, run, next, outs, kept)
	if err != nil {
		return store.Run{}, err
	}
	got, err := h.cfg.Store.ResetRun(ctx, store.Reset{From: run.ID, Batch: b})
	if err != nil {
		return store.Run{}, fmt.Errorf("reset %s: %w", run.ID, err)
	}
	h.afterReset(ctx, run, got, b.ParentEnded)
	return got, nil
}

// resetRun is the run a reset of run makes, not yet stored: its module,
// workflow, input, seed and start time, its id, its run timeout (as long
// as the run's, from now).
func (h *Host) resetRun(ctx context.Context, run store.Run, o ResetOptions) (store.Run, error) {
	ref := cmp.Or(o.Module, run.ModuleHash)
	m, err := h.modules.Info(ctx, ref)
	if err != nil {
		return store.Run{}, fmt.Errorf("reset %s: module %q: %w", run.ID, ref, err)
	}
	if !slices.Contains(m.Workflows, run.Workflow) {
		return store.Run{}, invalidf("reset %s: module %s has no workflow %q (the run's); it registers: %s", run.ID, shortHash(m.Hash), run.Workflow, strings.Join(m.Workflows, ", "))
	}
	input := run.Input
	if o.Input != nil {
		if input, err = h.runInput(o.Input); err != nil {
			return store.Run{}, fmt.Errorf("reset %s: --input: %w", run.ID, err)
		}
		if err := checkInput(m, run.Workflow, input); err != nil {
			return store.Run{}, fmt.Errorf("reset %s: %w", run.ID, err)
		}
	}
	id, err := h.resetID(ctx, run.ID, o.NewID)
	if err != nil {
		return store.Run{}, err
	}
	now := time.Now()
	next := store.Run{ID: id, ModuleHash: m.Hash, Workflow: run.Workflow, Input: input, Seed: run.Seed,
		StartTime: run.StartTime, Status: store.RunPending, ResetFrom: run.ID, ResetKey: o.ToKey, CreatedAt: now, UpdatedAt: now}
	if run.Deadline != 0 {
		next.Deadline = now.UnixNano() + max(run.Deadline-run.CreatedAt.UnixNano(), 1)
	}
	return next, nil
}

// resetID checks the new id given, or mints one: the first of
// ResetRunID(from, 1), (from, 2), … not taken.
func (h *Host) resetID(ctx context.Context, from, given string) (string, error) {
	if given != "" {
		if err := validRunID(given, false); err != nil {
			return "", invalidf("reset %s: --id: %w", from, err)
		}
		if ns := store.NamespaceOf(from); store.NamespaceOf(given) != ns {
			return "", invalidf("reset %s: --id %s: the new run must be in the reset run's namespace, %s", from, given, ns)
		}
		return given, nil
	}
	for n := 1; ; n++ {
		id := ResetRunID(from, n)
		if _, local := store.SplitQualified(id); len(local) > MaxRunIDLen {
			return "", invalidf("reset %s: the id a reset mints, %.40q…, is longer than %d characters: give the new run's id", from, id, MaxRunIDLen)
		}
		_, err := h.cfg.Store.Run(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return id, nil
		}
		if err != nil {
			return "", fmt.Errorf("reset %s: %w", from, err)
		}
	}
}

// resetBatch is the batch that makes the new run next with the kept
// records (and their attempts), and what the run's end does to its
// child runs that have not ended (their parent close policy).
func (h *Host) resetBatch(ctx context.Context, run, next store.Run, outs, kept []store.Outcome) (store.Batch, error) {
	b := store.Batch{Creates: []store.Run{next}}
	keys := make(map[string]bool, len(kept))
	for _, o := range kept {
		keys[o.Key] = true
		b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: next.ID, Outcome: o})
	}
	atts, err := h.cfg.Store.Attempts(ctx, run.ID)
	if err != nil {
		return store.Batch{}, fmt.Errorf("reset %s: %w", run.ID, err)
	}
	for _, a := range atts {
		if keys[a.Key] {
			b.Attempts = append(b.Attempts, store.RunAttempt{RunID: next.ID, Attempt: a})
		}
	}
	reason := store.CleanText(fmt.Sprintf("parent run %s ended (reset as %s)", run.ID, next.ID))
	for _, o := range outs {
		if o.Kind != "child" {
			continue
		}
		c, err := h.cfg.Store.Run(ctx, ChildRunID(run.ID, o.Key))
		if errors.Is(err, store.ErrNotFound) {
			continue // issued, never created
		} else if err != nil {
			return store.Batch{}, fmt.Errorf("reset %s: child run: %w", run.ID, err)
		}
		if c.Status.Terminal() {
			continue
		}
		e := store.ParentEnd{RunID: c.ID, Reason: reason}
		if c.ParentClose == store.ParentCloseAbandon {
			e = store.ParentEnd{RunID: c.ID, Abandon: true}
		}
		b.ParentEnded = append(b.ParentEnded, e)
	}
	return b, nil
}

// afterReset stops this host's drive of the run reset, cancels its
// activity tasks, delivers the cancellations of its children and signals
// the workers (the new run is due).
func (h *Host) afterReset(ctx context.Context, run, next store.Run, ends []store.ParentEnd) {
	h.mu.Lock()
	stop := h.leased[run.ID]
	h.mu.Unlock()
	if stop != nil {
		stop(errReset)
	}
	ctx = context.WithoutCancel(ctx)
	if err := h.cfg.Store.CancelTasks(ctx, run.ID, "the run was reset as "+next.ID); err != nil {
		h.log.Warn("reset: cancel the activity tasks of the run reset", "run", run.ID, "err", err)
	}
	for _, e := range ends {
		if e.Abandon {
			continue
		}
		if _, err := h.Cancel(ctx, e.RunID, e.Reason); err != nil && !errors.Is(err, ErrTerminal) {
			h.log.Warn("reset: cancel child run", "run", run.ID, "child", e.RunID, "err", err)
		}
	}
	h.log.Info("run reset", "run", run.ID, "to", next.ID, "key", next.ResetKey)
	h.signal()
}

// resetSettleError is Resolve's error for a promise of run id, which was
// reset: it names the new run, whose own promises are to be settled. It
// wraps ErrTerminal (the HTTP API answers 409).
func (h *Host) resetSettleError(ctx context.Context, id string) error {
	next := "the new run"
	if r, err := h.cfg.Store.Run(ctx, id); err == nil && r.ResetTo != "" {
		next = r.ResetTo
	}
	return fmt.Errorf("run %s was reset as %s: its promises can no longer be settled (settle the new run's own promise instead): %w", id, next, ErrTerminal)
}
