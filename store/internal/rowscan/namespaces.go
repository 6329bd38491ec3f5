package rowscan

import (
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// Namespace records on both SQL backends: the table namespaces (name,
// description, retention, weight, created_at, updated_at), the same
// statements with each backend's parameter mark.

// NamespaceColumns are the columns of namespaces that Namespace reads,
// in order.
const NamespaceColumns = `name, description, retention, weight, created_at, updated_at`

// Namespace reads a row of NamespaceColumns.
func Namespace(s Scanner) (store.Namespace, error) {
	var n store.Namespace
	var retention, created, updated int64
	if err := s.Scan(&n.Name, &n.Description, &retention, &n.Weight, &created, &updated); err != nil {
		return store.Namespace{}, err
	}
	n.Retention = time.Duration(retention)
	n.CreatedAt, n.UpdatedAt = time.Unix(0, created), time.Unix(0, updated)
	return n, nil
}

// NamespaceContentsSQL counts, in one row, what a namespace holds in the
// order of store.NamespaceContents (without Keys); its parameters are
// NamespaceContentsArgs. Qualified ids and names compare by bytes on
// both backends, so the rows of a namespace are a range of each
// table's primary key (see selectWhere).
//
// API keys (issue 35 item 2) are not counted here: when their table
// lands, add its count (by its namespace column, ?3) to this row and to
// the Scan of NamespaceContents.
func NamespaceContentsSQL(mark string) string {
	const q = `SELECT
	(SELECT count(*) FROM runs WHERE id >= ?1 AND id < ?2),
	(SELECT count(*) FROM schedules WHERE name >= ?1 AND name < ?2),
	(SELECT count(*) FROM hooks WHERE name >= ?1 AND name < ?2),
	(SELECT count(*) FROM batch_jobs WHERE id >= ?1 AND id < ?2 AND status = 'running'),
	(SELECT count(*) FROM attr_decls WHERE namespace = ?3)`
	return strings.ReplaceAll(q, "?", mark)
}

// Stmt is one SQL statement with its parameters.
type Stmt struct {
	SQL  string
	Args []any
}

// NamespaceModulesDelete are the statements that take namespace ns's
// modules from it when it is deleted: its ownership of them and its
// names (the bytes stay while another namespace owns them); mark is the
// parameter prefix.
func NamespaceModulesDelete(mark, ns string) []Stmt {
	p := store.NamespacePrefix(ns)
	return []Stmt{
		{`DELETE FROM module_owners WHERE namespace = ` + mark + `1`, []any{ns}},
		{`DELETE FROM module_names WHERE name >= ` + mark + `1 AND name < ` + mark + `2`, []any{p, store.PrefixEnd(p)}},
	}
}

// NamespaceContentsArgs are the parameters of NamespaceContentsSQL for
// namespace ns (not DefaultNamespace, whose ids have no prefix).
func NamespaceContentsArgs(ns string) []any {
	p := store.NamespacePrefix(ns)
	return []any{p, store.PrefixEnd(p), ns}
}

// NamespaceContents reads the row of NamespaceContentsSQL.
func NamespaceContents(s Scanner) (store.NamespaceContents, error) {
	var c store.NamespaceContents
	err := s.Scan(&c.Runs, &c.Schedules, &c.Hooks, &c.BatchJobs, &c.AttrDecls)
	return c, err
}
