package rowscan

import (
	"strconv"
	"time"

	"github.com/skeinrun/skein/store"
)

// Search attributes on both SQL backends: the tables attr_decls
// (namespace, name, type, created_at) and run_attrs (run_id, name, type,
// v_text, v_int, v_real: store.AttrColumn), the same statements with
// each backend's parameter mark.

// AttrColumns are the columns of run_attrs that Attr reads, in order.
const AttrColumns = `run_id, name, type, v_text, v_int, v_real`

// AttrDeclColumns are the columns of attr_decls that AttrDecl reads.
const AttrDeclColumns = `name, type, created_at`

// UpsertAttrSQL is the write of one value, over the run's value of that
// name (the newest wins); its parameters are AttrArgs.
func UpsertAttrSQL(mark string) string {
	p := func(i int) string { return mark + strconv.Itoa(i) }
	return `INSERT INTO run_attrs (run_id, name, type, v_text, v_int, v_real) VALUES (` +
		p(1) + `, ` + p(2) + `, ` + p(3) + `, ` + p(4) + `, ` + p(5) + `, ` + p(6) + `)
ON CONFLICT (run_id, name) DO UPDATE SET type = excluded.type, v_text = excluded.v_text, v_int = excluded.v_int, v_real = excluded.v_real`
}

// AttrArgs are the parameters of UpsertAttrSQL for value v of name on
// run id (its columns per store.AttrColumn; the others NULL).
func AttrArgs(id, name string, v any) []any {
	t, _ := store.AttrTypeOf(v)
	col, x := store.AttrColumn(v)
	args := []any{id, name, string(t), nil, nil, nil}
	switch col {
	case "v_text":
		args[3] = x
	case "v_int":
		args[4] = x
	case "v_real":
		args[5] = x
	}
	return args
}

// Attr reads a row of AttrColumns: the run's id, the name and the value.
func Attr(s Scanner) (id, name string, v any, err error) {
	var typ string
	var text *string
	var i *int64
	var f *float64
	if err := s.Scan(&id, &name, &typ, &text, &i, &f); err != nil {
		return "", "", nil, err
	}
	return id, name, store.AttrFromColumns(store.AttrType(typ), deref(text), deref(i), deref(f)), nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// AttrDecl reads a row of AttrDeclColumns.
func AttrDecl(s Scanner) (store.AttrDecl, error) {
	var d store.AttrDecl
	var typ string
	var created int64
	if err := s.Scan(&d.Name, &typ, &created); err != nil {
		return store.AttrDecl{}, err
	}
	d.Type = store.AttrType(typ)
	d.CreatedAt = time.Unix(0, created)
	return d, nil
}

// attrCond is the SQL of one attribute condition of Runs: the ids of the
// runs whose value of c.Name, of declared type t, meets c (as
// store.AttrMatch compares). A run without the attribute is not among
// them.
func (q *runsQuery) attrCond(c store.AttrCond, t store.AttrType) string {
	s := "id IN (SELECT run_id FROM run_attrs WHERE name = " + q.arg(c.Name) + " AND "
	if c.Op == store.AttrContains {
		fn := "instr(v_text, " // SQLite
		if q.mark == "$" {
			fn = "strpos(v_text, "
		}
		return s + fn + q.arg(c.Value) + ") > 0)"
	}
	col, v := store.AttrColumn(c.Value)
	switch {
	case t == store.AttrFloat:
		col = "v_real"
		if i, ok := v.(int64); ok {
			v = float64(i)
		}
	case t == store.AttrInt && col == "v_real":
		col = "CAST(v_int AS DOUBLE PRECISION)" // an int compared with a float, as floats
	}
	return s + col + " " + string(c.Op) + " " + q.arg(v) + ")"
}
