package rowscan

import (
	"strings"

	"github.com/skeinrun/skein/store"
)

// selectWhere adds the conditions of s (store.RunSelect.Selects in SQL)
// to where. ids compare by bytes on both backends (SQLite's BINARY,
// Postgres's COLLATE "C"), so a prefix is a range of the primary key.
func (q *runsQuery) selectWhere(s store.RunSelect, where []string) []string {
	if len(s.Statuses) > 0 {
		where = append(where, "status IN ("+list(q, s.Statuses)+")")
	}
	if len(s.IDs) > 0 {
		where = append(where, "id IN ("+list(q, s.IDs)+")")
	}
	if s.EndedFrom != 0 || s.EndedTo != 0 {
		where = append(where, "status IN ("+endedStatusesSQL()+")")
	}
	if s.EndedFrom != 0 {
		where = append(where, "updated_at >= "+q.arg(s.EndedFrom))
	}
	if s.EndedTo != 0 {
		where = append(where, "updated_at < "+q.arg(s.EndedTo))
	}
	if s.Parent != "" {
		where = append(where, "parent = "+q.arg(s.Parent))
	}
	for _, p := range s.IDPrefixes() {
		where = append(where, "id >= "+q.arg(p))
		if end := store.PrefixEnd(p); end != "" {
			where = append(where, "id < "+q.arg(end))
		}
	}
	if s.InDefaultNamespace() {
		where = append(where, q.contains("id", store.NamespaceSep)+" = 0")
	}
	if s.ErrorContains != "" {
		where = append(where, q.contains("error", s.ErrorContains)+" > 0")
	}
	return where
}

// contains is the SQL position of text in column (0: absent), text
// passed as a parameter.
func (q *runsQuery) contains(column, text string) string {
	fn := "instr(" // SQLite
	if q.mark == "$" {
		fn = "strpos(" // Postgres
	}
	return fn + column + ", " + q.arg(text) + ")"
}

// list adds each value as a parameter and returns their markers, comma
// separated.
func list[T ~string](q *runsQuery, vs []T) string {
	ms := make([]string, len(vs))
	for i, v := range vs {
		ms[i] = q.arg(string(v))
	}
	return strings.Join(ms, ", ")
}

// endedStatusesSQL lists the Terminal statuses as SQL literals.
func endedStatusesSQL() string {
	var ended []string
	for _, s := range store.RunStatuses {
		if s.Terminal() {
			ended = append(ended, "'"+string(s)+"'")
		}
	}
	return strings.Join(ended, ", ")
}
