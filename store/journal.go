package store

import (
	"cmp"
	"strings"
)

// MergeOutcome is the rule of every store's upsert of outcome o at a key
// that holds old: a pending o never replaces a settled old (ok is false
// and old stays as it is: an activity's attempt counter written late must
// not undo its outcome); otherwise o replaces old, keeping the higher
// Attempts of the two, old's StartedAt and SettledAt where they are not
// zero, and old's Schema where o has none.
func MergeOutcome(old, o Outcome) (merged Outcome, ok bool) {
	if o.Status == OutcomePending && old.Status != OutcomePending {
		return old, false
	}
	o.Attempts = max(o.Attempts, old.Attempts)
	o.StartedAt = cmp.Or(old.StartedAt, o.StartedAt)
	o.SettledAt = cmp.Or(old.SettledAt, o.SettledAt)
	if o.Schema == nil {
		o.Schema = old.Schema
	}
	return o, true
}

// CompareJournal orders two outcomes of a run as Store.Outcomes returns
// them: those with Seq != 0 by Seq, then those with Seq 0; equal Seqs by
// Key, bytewise.
func CompareJournal(a, b Outcome) int {
	if (a.Seq == 0) != (b.Seq == 0) {
		if a.Seq == 0 {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(a.Seq, b.Seq), strings.Compare(a.Key, b.Key))
}
