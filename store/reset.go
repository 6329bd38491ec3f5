package store

import (
	"errors"
	"fmt"
)

// Reset is what ResetRun writes in one transaction (host.Reset,
// docs/api.md "Resetting a run").
type Reset struct {
	// From is the run reset. It gets the status RunReset and ResetTo
	// (the id of the run Batch creates) and its lease is released (the
	// history records the release); its Result, Error and module stay.
	From string
	// Batch holds the writes that make the new run, applied as an
	// unfenced Commit applies them in the same transaction: its Creates
	// are the new run (one, with ResetFrom = From and ResetKey set), its
	// Outcomes, Settlements and Attempts are the new run's, and its
	// ParentEnded are what From's end does to its child runs. Its Fence,
	// Release, Runs and Tasks must be empty.
	Batch Batch
}

// ErrResetRefused is wrapped by the error of a ResetRun whose From run
// cannot be reset: it continued as new or was reset already (it is not
// the newest run of its chain).
var ErrResetRefused = errors.New("the run cannot be reset")

// ResetRefusedError is the error of a ResetRun of the run old, which
// continued or was reset already: it names the run and its successor
// and wraps ErrResetRefused and ErrConflict.
func ResetRefusedError(old Run) error {
	next := old.ResetTo
	if next == "" {
		next = "its successor"
	}
	return fmt.Errorf("run %s is %s (as %s): only the newest run of a chain can be reset, reset %s instead: %w (%w)",
		old.ID, old.Status, next, next, ErrResetRefused, ErrConflict)
}

// CanReset reports whether ResetRun may reset a run stored with status
// st: every status but continued and reset.
func (st RunStatus) CanReset() bool { return st != RunContinued && st != RunReset }

// Check checks the rules of r that need no store: a From, one run
// created with ResetFrom = From, and nothing but that run's writes (and
// ParentEnded).
func (r *Reset) Check() error {
	b := &r.Batch
	switch {
	case r.From == "":
		return errors.New("reset: no run to reset")
	case len(b.Creates) != 1:
		return fmt.Errorf("reset %s: %d runs to create, want 1", r.From, len(b.Creates))
	case b.Creates[0].ResetFrom != r.From || b.Creates[0].ID == "" || b.Creates[0].ID == r.From:
		return fmt.Errorf("reset %s: the new run %q must have ResetFrom %q", r.From, b.Creates[0].ID, r.From)
	case b.Fence != nil || b.Release || len(b.Runs) > 0 || len(b.Tasks) > 0:
		return fmt.Errorf("reset %s: the batch must not fence, release, update runs or queue tasks", r.From)
	}
	id := b.Creates[0].ID
	for i := range b.Outcomes {
		if b.Outcomes[i].RunID != id {
			return fmt.Errorf("reset %s: an outcome of run %s, not of the new run %s", r.From, b.Outcomes[i].RunID, id)
		}
	}
	for i := range b.Settlements {
		if b.Settlements[i].RunID != id {
			return fmt.Errorf("reset %s: a settlement of run %s, not of the new run %s", r.From, b.Settlements[i].RunID, id)
		}
	}
	for i := range b.Attempts {
		if b.Attempts[i].RunID != id {
			return fmt.Errorf("reset %s: an attempt of run %s, not of the new run %s", r.From, b.Attempts[i].RunID, id)
		}
	}
	return b.CheckTexts()
}
