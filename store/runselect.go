package store

import (
	"slices"
	"strings"
)

// RunSelect holds the conditions of a RunFilter beyond its first ones,
// those the filter language (internal/runfilter) adds: every one that is
// set must hold.
type RunSelect struct {
	Statuses      []RunStatus // the run's status is one of them; empty: any
	IDs           []string    // the run's id is one of them; empty: any
	EndedFrom     int64       // unix ns: runs that ended (Terminal) at or after it; 0: no bound
	EndedTo       int64       // unix ns: runs that ended before it; 0: no bound
	Parent        string      // the parent run's id; empty: any
	Schedule      string      // runs of the schedule of this name (ScheduleRunIDPrefix); empty: any
	Hook          string      // runs of the webhook of this name (HookRunIDPrefix); empty: any
	ErrorContains string      // the run's error holds this text (case-sensitive); empty: any
	// Namespace: only runs of this namespace (store/namespace.go): ids
	// with its prefix, or, for DefaultNamespace, ids without '/'; empty:
	// any.
	Namespace string
}

// ScheduleRunIDPrefix is how the id of every run the schedule of
// qualified name starts begins ("sched:{name}@" in the schedule's
// namespace, host.ScheduleRunID), and so do its successors' and its
// children's ids.
func ScheduleRunIDPrefix(name string) string {
	ns, local := SplitQualified(name)
	return Qualify(ns, "sched:"+local+"@")
}

// HookRunIDPrefix is how the id of every run the webhook of qualified
// name starts begins ("hook:{name}:" in the hook's namespace,
// host.HookRunID), and so do its successors' and its children's ids.
func HookRunIDPrefix(name string) string {
	ns, local := SplitQualified(name)
	return Qualify(ns, "hook:"+local+":")
}

// InDefaultNamespace reports whether s selects only runs of
// DefaultNamespace: ids without '/', a condition no prefix says.
func (s RunSelect) InDefaultNamespace() bool { return s.Namespace == DefaultNamespace }

// IDPrefixes are the prefixes a selected run's id must all have: those
// of Namespace (other than DefaultNamespace), Schedule and Hook, when
// set.
func (s RunSelect) IDPrefixes() []string {
	var ps []string
	if p := NamespacePrefix(s.Namespace); p != "" {
		ps = append(ps, p)
	}
	if s.Schedule != "" {
		ps = append(ps, ScheduleRunIDPrefix(s.Schedule))
	}
	if s.Hook != "" {
		ps = append(ps, HookRunIDPrefix(s.Hook))
	}
	return ps
}

// PrefixEnd is the least string greater than every string that starts
// with prefix, "" when there is none (prefix is empty or all 0xff): the
// ids with the prefix are those >= prefix and < PrefixEnd(prefix), in
// byte order.
func PrefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// Selects reports whether r meets s's conditions. The memory store
// filters with it; the SQL stores say the same in SQL
// (store/internal/rowscan).
func (s RunSelect) Selects(r *Run) bool {
	if len(s.Statuses) > 0 && !slices.Contains(s.Statuses, r.Status) {
		return false
	}
	if len(s.IDs) > 0 && !slices.Contains(s.IDs, r.ID) {
		return false
	}
	if s.EndedFrom != 0 || s.EndedTo != 0 {
		ended := r.UpdatedAt.UnixNano()
		if !r.Status.Terminal() || s.EndedFrom != 0 && ended < s.EndedFrom || s.EndedTo != 0 && ended >= s.EndedTo {
			return false
		}
	}
	for _, p := range s.IDPrefixes() {
		if !strings.HasPrefix(r.ID, p) {
			return false
		}
	}
	if s.InDefaultNamespace() && strings.Contains(r.ID, NamespaceSep) {
		return false
	}
	return (s.Parent == "" || r.Parent == s.Parent) &&
		(s.ErrorContains == "" || strings.Contains(r.Error, s.ErrorContains))
}

// Storable returns s without the ids that are not valid texts
// (ValidText), and false when s can select no stored run: a text
// condition is not a valid text, or every id of IDs was dropped. A store
// keeps valid texts only (store/text.go), and Postgres refuses to compare
// with others.
func (s RunSelect) Storable() (RunSelect, bool) {
	for _, t := range []string{s.Parent, s.Schedule, s.Hook, s.ErrorContains, s.Namespace} {
		if !ValidText(t) {
			return s, false
		}
	}
	if len(s.IDs) == 0 {
		return s, true
	}
	ids := make([]string, 0, len(s.IDs))
	for _, id := range s.IDs {
		if ValidText(id) {
			ids = append(ids, id)
		}
	}
	s.IDs = ids
	return s, len(ids) > 0
}
