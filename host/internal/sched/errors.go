package sched

import "fmt"

// CodeMismatchError reports that replay reached a recorded key whose
// recorded function differs from the one the code now calls: the workflow
// code changed under a running workflow.
type CodeMismatchError struct {
	Key      string // lineage key of the op
	Recorded string // function recorded for the key
	Got      string // function the code calls now
}

func (e *CodeMismatchError) Error() string {
	return fmt.Sprintf("code mismatch at key %q: recorded function %q, the code now calls %q", e.Key, e.Recorded, e.Got)
}

// NondeterminismError reports the first point where a replay departs from
// the recorded journal.
type NondeterminismError struct {
	Seq      int64  // settle sequence (tick) of the recorded outcome concerned
	Expected string // what the journal says happens there
	Got      string // what the replay did instead
}

func (e *NondeterminismError) Error() string {
	if e.Seq == 0 { // not at a recorded outcome: an op the journal does not hold
		return fmt.Sprintf("nondeterminism: expected %s, got %s", e.Expected, e.Got)
	}
	return fmt.Sprintf("nondeterminism at tick %d: expected %s, got %s", e.Seq, e.Expected, e.Got)
}

// MisuseError reports a guest that broke the scheduling protocol (a bad
// handle, an op inside a step body, awaiting a promise it cannot wait on).
// The run fails with it.
type MisuseError struct{ Msg string }

func (e *MisuseError) Error() string { return e.Msg }

func misuse(format string, args ...any) error {
	return &MisuseError{Msg: fmt.Sprintf(format, args...)}
}
