package store

import (
	"errors"
	"fmt"
	"time"
)

// Pause is who paused a run, why, and when (Run.Paused).
type Pause struct {
	By     string // who: "api", a token's label, "retry policy"
	Reason string
	At     int64 // unix ns; 0: the run is not paused
}

// IsPaused reports whether the run is paused (see Store.PauseRun).
func (r Run) IsPaused() bool { return r.Paused.At != 0 }

// ErrEnded is returned (wrapped) by PauseRun for a run that has ended:
// only a run that may still execute can be held.
var ErrEnded = errors.New("the run has ended")

// ErrPaused is returned (wrapped, by a *PausedError) by ClaimRun for a
// paused run: it is not executed until it is unpaused.
var ErrPaused = errors.New("the run is paused")

// PausedError is the error of ClaimRun for a paused run: it names the
// pause and wraps ErrPaused.
type PausedError struct {
	RunID string
	Pause Pause
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("run %s is paused (by %s since %s: %s); unpause it first", e.RunID, e.Pause.By,
		time.Unix(0, e.Pause.At).UTC().Format(time.RFC3339), e.Pause.Reason)
}

// Unwrap returns ErrPaused.
func (e *PausedError) Unwrap() error { return ErrPaused }

// CheckPause checks the arguments of PauseRun: texts a store can keep
// and a pause time. Every backend calls it.
func CheckPause(by, reason string, at int64) error {
	if at <= 0 {
		return fmt.Errorf("pause time %d: need a time after 1970", at)
	}
	if by == "" {
		return errors.New("a pause needs who paused the run")
	}
	if err := CheckText("paused by", by); err != nil {
		return err
	}
	return CheckText("pause reason", reason)
}

// PauseEnded is the error of PauseRun for run r that has ended.
func PauseEnded(r Run) error {
	return fmt.Errorf("run %s is %s: an ended run cannot be paused: %w", r.ID, r.Status, ErrEnded)
}

// SetPause decides a write of a run's pause (PauseRun, UnpauseRun) from
// the run as stored: the pause to write, and whether to write it.
type SetPause func(Run) (Pause, bool, error)

// Pausing is PauseRun's decision: an ended run is refused (PauseEnded),
// a paused one kept as it is (the first pause stays), any other paused
// with the pause given.
func Pausing(by, reason string, at int64) SetPause {
	return func(r Run) (Pause, bool, error) {
		if r.Status.Terminal() {
			return Pause{}, false, PauseEnded(r)
		}
		return Pause{By: by, Reason: reason, At: at}, !r.IsPaused(), nil
	}
}

// Unpausing is UnpauseRun's decision: clear the pause of a paused run.
func Unpausing(r Run) (Pause, bool, error) { return Pause{}, r.IsPaused(), nil }
