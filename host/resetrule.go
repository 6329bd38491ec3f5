package host

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skeinrun/skein/store"
)

// The rule of a reset (docs/api.md "Resetting a run"; RATIONALE.md
// "A reset keeps a prefix of the settle order"): resetting a run to the
// key K keeps the settled records whose settle sequence is below a cut,
// and nothing else. The cut is K's own sequence, or lower: the lowest
// sequence of a record that settled before K but comes after K in K's
// task, or in a task that task started after K. A kept journal is so
// always a prefix of the settle order, as a crash just before the cut
// would have left it, which every replay handles exactly (and skein
// check proves it of every crash point).

// resetJournal returns the records of the journal outs (store order) that
// a reset to key keeps, in settle order, and the record at key.
func resetJournal(runID string, outs []store.Outcome, key string) ([]store.Outcome, store.Outcome, error) {
	i := slices.IndexFunc(outs, func(o store.Outcome) bool { return o.Key == key })
	if i < 0 {
		return nil, store.Outcome{}, invalidf("reset %s: key %q is not in the run's journal: reset to the key of an op the run recorded (skein inspect %s lists them)", runID, key, runID)
	}
	k := outs[i]
	switch {
	case k.Status == store.OutcomePending:
		return nil, k, invalidf("reset %s: the op at key %q is pending: a reset re-executes a settled op and what follows it; reset to a settled one, or wait for it", runID, key)
	case k.Orphaned:
		return nil, k, invalidf("reset %s: the op at key %q is orphaned (the run's latest execution never reached it): reset to a key it reached", runID, key)
	}
	cut := resetCut(outs, k)
	var kept []store.Outcome
	for _, o := range outs {
		if o.Status != store.OutcomePending && !o.Orphaned && o.Seq < cut {
			kept = append(kept, o)
		}
	}
	slices.SortFunc(kept, func(a, b store.Outcome) int { return int(a.Seq - b.Seq) })
	return kept, k, nil
}

// resetCut returns the sequence from which a reset to the record k drops
// every record: k's own, or that of an earlier-settled record that comes
// after k in program order within k's scope (a later op of k's task, or
// an op of a task or branch it started later). The order of two keys in
// one scope is read off their positions; where one is named (no
// position in the key), the record issued later (StartedAt) is taken to
// come after, and an issue time not known counts as after.
func resetCut(outs []store.Outcome, k store.Outcome) int64 {
	cut := k.Seq
	if k.Key == store.CancelKey {
		return cut // not an op of any task
	}
	scope, last := "", k.Key
	if i := strings.LastIndexByte(k.Key, '.'); i >= 0 {
		scope, last = k.Key[:i], k.Key[i+1:]
	}
	kpos, kok := keyPosition(last)
	for _, o := range outs {
		if o.Status == store.OutcomePending || o.Orphaned || o.Seq >= cut || o.Key == store.CancelKey {
			continue
		}
		rest, ok := o.Key, true
		if scope != "" {
			rest, ok = strings.CutPrefix(o.Key, scope+".")
		}
		if !ok {
			continue // another task's, outside k's scope
		}
		seg, _, _ := strings.Cut(rest, ".")
		pos, pok := keyPosition(seg)
		after := pos > kpos
		if !pok || !kok {
			after = o.StartedAt == 0 || k.StartedAt == 0 || o.StartedAt > k.StartedAt
		}
		if after {
			cut = min(cut, o.Seq)
		}
	}
	return cut
}

// keyPosition returns the position a key segment holds in its scope: p
// for an op "p" or a fork "p", p for a spawned task "tp"; false for a
// name.
func keyPosition(seg string) (int, bool) {
	s := strings.TrimPrefix(seg, "t")
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// resetRunIDPrefix separates a run id from the count of its resets in
// the id a reset mints: "order-7~reset-1". Ids a caller gives cannot hold
// '~', so a minted one never collides with one.
const resetRunIDPrefix = "~reset-"

// ResetRunID returns the id a reset of run id mints when it is given
// none: the run id without a "~reset-N" suffix, then "~reset-" and n.
func ResetRunID(id string, n int) string {
	if i := strings.LastIndex(id, resetRunIDPrefix); i >= 0 {
		if _, ok := keyPosition(id[i+len(resetRunIDPrefix):]); ok {
			id = id[:i]
		}
	}
	return fmt.Sprintf("%s%s%d", id, resetRunIDPrefix, n)
}
