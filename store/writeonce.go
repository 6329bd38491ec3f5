package store

import (
	"bytes"
	"fmt"
)

// The texts of the write-once errors, the same in every backend (the SQL
// ones raise them from triggers).

// OutcomeImmutableError is the error of a write that would change the
// settled outcome old of run runID (see Batch): it names both and wraps
// ErrImmutable.
func OutcomeImmutableError(runID string, old Outcome) error {
	return fmt.Errorf("run %s: settled outcome %s (%s) cannot change: %w", runID, old.Key, old.Status, ErrImmutable)
}

// RunImmutableError is the error of a write that would change the ended
// run old (see Batch): it names it and wraps ErrImmutable.
func RunImmutableError(old Run) error {
	return fmt.Errorf("run %s is %s: its status, result, error and module cannot change: %w", old.ID, old.Status, ErrImmutable)
}

// JournalClosedError is the error of a write of an outcome of the run id
// whose stored status st is final (see Batch): it names both and wraps
// ErrImmutable.
func JournalClosedError(id string, st RunStatus) error {
	return fmt.Errorf("run %s is %s: its journal is closed, no outcome of it can be written: %w", id, st, ErrImmutable)
}

// Final reports whether a run's status, result, error and module are
// final: it completed, was canceled, continued as new or was reset. (A
// failed or diverged run may be resumed onto new code.)
func (s RunStatus) Final() bool {
	return s == RunCompleted || s == RunCanceled || s == RunContinued || s == RunReset
}

// CreateConflictError is the error of a Batch that creates run id when a
// run with that id exists: it wraps ErrConflict.
func CreateConflictError(id string) error {
	return fmt.Errorf("create run %s: a run with this id exists: %w", id, ErrConflict)
}

// ChangesSettled reports whether writing o over the stored outcome old
// changes what is write-once: old is settled and o is settled too (a
// pending write over a settled outcome is skipped, not refused) with
// another status, value, error, kind or function. A nil and an empty
// value are the same.
func ChangesSettled(old, o Outcome) bool {
	if old.Status == OutcomePending || o.Status == OutcomePending {
		return false
	}
	return o.Status != old.Status || !bytes.Equal(o.Value, old.Value) || o.Error != old.Error ||
		o.Kind != old.Kind || o.Function != old.Function
}

// ChangesFinal reports whether the update u of the stored run old changes
// what is write-once: old is final and u has another status, result,
// error or module. A nil and an empty result are the same.
func ChangesFinal(old, u Run) bool {
	return old.Status.Final() && (u.Status != old.Status || !bytes.Equal(u.Result, old.Result) ||
		u.Error != old.Error || u.ModuleHash != old.ModuleHash)
}
