package exec

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// Texts that cross into the host (from a module through the ABI, from a
// client through the API, from a worker) end up in the store, which keeps
// only valid UTF-8 without NUL bytes (store.ErrInvalidText). Names are
// refused at the boundary: an op's name is an id error (lineage.RuleText),
// a function, activity or workflow name fails the execution before the op
// is issued. Error texts and reasons are recorded made valid
// (store.CleanText: \x00 for a NUL, \xNN for a byte that is not UTF-8),
// so a workflow's error never keeps its run from ending.

// errOutcome is the failed outcome with error text msg, made valid.
func errOutcome(msg string) sched.Outcome { return sched.Outcome{Err: store.CleanText(msg)} }

// checkNameText checks a function, activity or workflow name a module
// gives: valid UTF-8 without control characters.
func CheckNameText(what, name string) error {
	if i := badNameText(name); i >= 0 {
		return fmt.Errorf("%s %q has %q at byte %d: a name must be valid UTF-8 without control characters (such as NUL)", what, name, name[i:i+1], i)
	}
	return nil
}

// badNameText returns the offset of the first byte of name that is not
// UTF-8 or starts a control character, or -1.
func badNameText(name string) int {
	for i, r := range name {
		if r == '\uFFFD' && !validRuneAt(name, i) || r < 0x20 || r >= 0x7f && r < 0xa0 {
			return i
		}
	}
	return -1
}

// validRuneAt reports whether the U+FFFD at byte i of s is written out
// (three bytes) rather than a byte that is not UTF-8.
func validRuneAt(s string, i int) bool {
	return len(s) >= i+3 && s[i:i+3] == "\uFFFD"
}

// checkValue checks a JSON value a module gives (a step's or task's
// value, an activity's or child's input): the store keeps it as bytes,
// but the API serves it inside JSON documents, so it must be valid JSON
// in valid UTF-8 (encoding/json's Valid does not check the UTF-8 of
// strings). An empty value is none.
func (x *Exec) checkValue(what func() string, b []byte) error {
	if len(b) == 0 || json.Valid(b) && utf8.Valid(b) {
		return nil
	}
	return x.fail("%s is not valid JSON in UTF-8: %.80q", what(), b)
}
