package store

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Every text a store keeps (ids, keys, names, kinds, functions, owners,
// error texts, reasons) must be valid UTF-8 without a NUL byte: that is
// what a PostgreSQL text column can hold, and every backend enforces the
// same rule so that a run behaves the same on each. JSON values (inputs,
// results, outcome values, progress) are bytes and are not concerned.

// ErrInvalidText is returned (wrapped, by a *TextError) by a write that
// holds a text no store can keep: one with a NUL byte or with bytes that
// are not UTF-8. Nothing of that write is applied. A read that names
// such a text (a run id, a key) finds nothing: ErrNotFound.
var ErrInvalidText = errors.New("stored text must be valid UTF-8 without NUL bytes")

// TextError names a text that breaks the rule of ErrInvalidText.
type TextError struct {
	Field string // what holds the text, e.g. `outcome "1" of run r1: error`
	Text  string // the text, as given
	At    int    // the byte offset of the first bad byte
}

func (e *TextError) Error() string {
	what := "a NUL byte"
	if e.Text[e.At] != 0 {
		what = fmt.Sprintf("byte 0x%02x, which is not UTF-8", e.Text[e.At])
	}
	return fmt.Sprintf("%s %.60q holds %s at byte %d: %v", e.Field, e.Text, what, e.At, ErrInvalidText)
}

// Unwrap returns ErrInvalidText.
func (e *TextError) Unwrap() error { return ErrInvalidText }

// badText returns the offset of the first byte of s that breaks the rule
// (a NUL, or a byte that does not start a valid UTF-8 sequence), or -1.
func badText(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0 {
			return i
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// ValidText reports whether s is valid UTF-8 without NUL bytes.
func ValidText(s string) bool { return badText(s) < 0 }

// CheckText returns a *TextError for field if s is not a valid text.
func CheckText(field, s string) error {
	if i := badText(s); i >= 0 {
		return &TextError{Field: field, Text: s, At: i}
	}
	return nil
}

// CleanText returns s made a valid text: each NUL byte written as \x00
// and each byte that is not UTF-8 as \xNN; a valid s is returned as it
// is. The host records error texts and reasons written by workflow code
// or by clients through it, so that what a module or a client says can
// always be stored.
func CleanText(s string) string {
	i := badText(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c == 0 {
			b.WriteString(`\x00`)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, `\x%02x`, c)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// checkTexts checks field/text pairs in order.
func checkTexts(prefix string, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := CheckText(prefix+pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// CheckTexts checks every text of a run.
func (r *Run) CheckTexts() error {
	if err := CheckAttrValues(CleanText(r.ID), r.Attrs); err != nil {
		return err
	}
	return checkTexts("run "+CleanText(r.ID)+": ", "id", r.ID, "module", r.ModuleHash, "workflow", r.Workflow,
		"error", r.Error, "parent", r.Parent, "cancel reason", r.Cancel, "parent close", string(r.ParentClose), "traceparent", r.TraceParent)
}

// CheckTexts checks every text of an outcome of run runID.
func (o *Outcome) CheckTexts(runID string) error {
	return checkTexts(fmt.Sprintf("outcome %q of run %s: ", o.Key, CleanText(runID)), "run id", runID,
		"key", o.Key, "kind", o.Kind, "function", o.Function, "error", o.Error)
}

// CheckTexts checks every text of a settlement.
func (s *Settlement) CheckTexts() error {
	return checkTexts(fmt.Sprintf("settlement %q of run %s: ", s.Key, CleanText(s.RunID)), "run id", s.RunID,
		"key", s.Key, "error", s.Error)
}

// CheckTexts checks every text of a task.
func (t *Task) CheckTexts() error {
	return checkTexts(fmt.Sprintf("task %q of run %s: ", t.Key, CleanText(t.RunID)), "run id", t.RunID,
		"key", t.Key, "name", t.Name, "owner", t.Owner, "last error", t.LastError, "traceparent", t.TraceParent)
}

// CheckTexts checks every text of a module.
func (m *Module) CheckTexts() error {
	if err := checkTexts("module: ", "hash", m.Hash, "name", m.Name); err != nil {
		return err
	}
	for _, w := range m.Workflows {
		if err := CheckText("module "+m.Hash+": workflow", w); err != nil {
			return err
		}
	}
	return nil
}

// CheckTexts checks every text a batch writes, in the order of its
// fields; the first bad one fails the whole batch.
func (b *Batch) CheckTexts() error {
	for i := range b.Attrs {
		if err := CheckAttrValues(CleanText(b.Attrs[i].RunID), b.Attrs[i].Values); err != nil {
			return err
		}
	}
	for i := range b.Creates {
		if err := b.Creates[i].CheckTexts(); err != nil {
			return err
		}
	}
	for i := range b.Outcomes {
		if err := b.Outcomes[i].Outcome.CheckTexts(b.Outcomes[i].RunID); err != nil {
			return err
		}
	}
	for i := range b.Runs {
		if err := b.Runs[i].CheckTexts(); err != nil {
			return err
		}
	}
	for i := range b.Settlements {
		if err := b.Settlements[i].CheckTexts(); err != nil {
			return err
		}
	}
	for i := range b.Tasks {
		if err := b.Tasks[i].CheckTexts(); err != nil {
			return err
		}
	}
	for i := range b.ParentEnded {
		if err := CheckText("cancel reason", b.ParentEnded[i].Reason); err != nil {
			return err
		}
	}
	for i := range b.Attempts {
		a := &b.Attempts[i]
		if err := checkTexts(fmt.Sprintf("attempt %d of %q of run %s: ", a.Attempt.N, a.Attempt.Key, CleanText(a.RunID)),
			"run id", a.RunID, "key", a.Attempt.Key, "error", a.Attempt.Error); err != nil {
			return err
		}
	}
	if b.Fence != nil {
		return checkTexts("fence: ", "run id", b.Fence.RunID, "owner", b.Fence.Owner)
	}
	return nil
}

// CheckTexts checks every text of a task's end.
func (e *TaskEnd) CheckTexts() error {
	if err := checkTexts(fmt.Sprintf("end of task %q of run %s: ", e.Key, CleanText(e.RunID)), "run id", e.RunID,
		"key", e.Key, "owner", e.Owner); err != nil {
		return err
	}
	if e.Settle != nil {
		return e.Settle.CheckTexts()
	}
	if e.Retry != nil {
		return CheckText(fmt.Sprintf("end of task %q of run %s: error", e.Key, CleanText(e.RunID)), e.Retry.Error)
	}
	return nil
}

// CheckTexts checks every text of a claim of tasks.
func (c *TaskClaim) CheckTexts() error {
	if err := CheckText("task claim: owner", c.Owner); err != nil {
		return err
	}
	for _, n := range c.Names {
		if err := CheckText("task claim: activity name", n); err != nil {
			return err
		}
	}
	return nil
}

// CheckTexts checks every text of a schedule.
func (s *Schedule) CheckTexts() error {
	return checkTexts("schedule: ", "name", s.Name, "cron", s.Cron, "timezone", s.Timezone, "module", s.Module, "workflow", s.Workflow)
}

// CheckTexts checks every text of a hook.
func (h *Hook) CheckTexts() error {
	return checkTexts("hook: ", "name", h.Name, "module", h.Module, "workflow", h.Workflow, "secret variable", h.SecretEnv)
}
