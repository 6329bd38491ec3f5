package rowscan

import (
	"strconv"
	"strings"

	"github.com/skeinrun/skein/store"
)

// RunsQuery is the query of store.Store.Runs for f on both SQL backends:
// the statement (SELECT RunColumns FROM runs …) and its arguments. mark
// is the parameter prefix, "?" (SQLite's ?N) or "$" (Postgres's $N);
// after is the cursor as the backend compares it with ids; decls are the
// attribute declarations, which f.Attrs passed (store.CheckAttrConds).
func RunsQuery(f store.RunFilter, limit int, mark, after string, decls []store.AttrDecl) (string, []any) {
	q := runsQuery{mark: mark}
	key := sortKeySQL(f.Order, f.Desc)
	cmp, dir := ">", ""
	if f.Desc {
		cmp, dir = "<", " DESC"
	}
	var where []string
	switch {
	case f.Order == store.OrderID && (!f.Desc || f.After != ""):
		where = append(where, "id "+cmp+" "+q.arg(after))
	case f.Order != store.OrderID && f.After != "":
		k := q.arg(f.AfterKey)
		where = append(where, "("+key+" "+cmp+" "+k+" OR ("+key+" = "+k+" AND id "+cmp+" "+q.arg(after)+"))")
	}
	if f.Status != "" {
		where = append(where, "status = "+q.arg(string(f.Status)))
	}
	if f.Workflow != "" {
		where = append(where, "workflow = "+q.arg(f.Workflow))
	}
	if f.Module != "" {
		where = append(where, "module_hash = "+q.arg(f.Module))
	}
	if f.CreatedFrom != 0 {
		where = append(where, "created_at >= "+q.arg(f.CreatedFrom))
	}
	if f.CreatedTo != 0 {
		where = append(where, "created_at < "+q.arg(f.CreatedTo))
	}
	where = q.selectWhere(f.RunSelect, where)
	for _, c := range f.Attrs {
		for _, d := range decls {
			if d.Name == c.Name {
				where = append(where, q.attrCond(c, d.Type))
			}
		}
	}
	s := "SELECT " + RunColumns + " FROM runs"
	if len(where) > 0 {
		s += " WHERE " + strings.Join(where, " AND ")
	}
	s += " ORDER BY "
	if f.Order != store.OrderID {
		s += key + dir + ", "
	}
	s += "id" + dir + " LIMIT " + q.arg(int64(limit))
	return s, q.args
}

type runsQuery struct {
	mark string
	args []any
}

// arg adds a parameter and returns its marker.
func (q *runsQuery) arg(v any) string {
	q.args = append(q.args, v)
	return q.mark + strconv.Itoa(len(q.args))
}

// sortKeySQL is store.RunSortKey in SQL.
func sortKeySQL(o store.RunOrder, desc bool) string {
	ended := endedStatusesSQL()
	// math.MinInt64 has no literal: -9223372036854775808 reads as the
	// negation of a number too large for an integer.
	notEnded := strconv.FormatInt(store.NotEndedKey(desc), 10)
	if desc {
		notEnded = "(-9223372036854775807 - 1)"
	}
	switch o {
	case store.OrderCreated:
		return "created_at"
	case store.OrderEnded:
		return "(CASE WHEN status IN (" + ended + ") THEN updated_at ELSE " + notEnded + " END)"
	case store.OrderDuration:
		return "(CASE WHEN status IN (" + ended + ") THEN updated_at - created_at ELSE " + notEnded + " END)"
	case store.OrderStatus:
		var b strings.Builder
		b.WriteString("(CASE status")
		for i, s := range store.RunStatuses {
			b.WriteString(" WHEN '" + string(s) + "' THEN " + strconv.Itoa(i))
		}
		b.WriteString(" ELSE -1 END)")
		return b.String()
	}
	return "id"
}
