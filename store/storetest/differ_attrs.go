package storetest

import (
	"time"

	"github.com/skeinrun/skein/store"
)

// The differ's search attributes: values written with runs and batches,
// conditions of Runs (declared names of each type, an undeclared one,
// values of the right and the wrong type), and RunAttrs compared.

var diffAttrDecls = []store.AttrDecl{{Name: "n", Type: store.AttrInt}, {Name: "f", Type: store.AttrFloat},
	{Name: "s", Type: store.AttrString}, {Name: "b", Type: store.AttrBool}, {Name: "t", Type: store.AttrTime}}

// declareAttrs declares diffAttrDecls in both stores.
func (d *differ) declareAttrs() {
	ctx := d.t.Context()
	for _, a := range diffAttrDecls {
		a.CreatedAt = diffTS(0)
		d1, err1 := d.got.CreateAttr(ctx, a)
		d2, err2 := d.ref.CreateAttr(ctx, a)
		d.compare("CreateAttr "+a.Name, d1, err1, d2, err2)
	}
}

// attrValue is a value of a random type.
func (d *differ) attrValue() any {
	switch d.rng.IntN(5) {
	case 0:
		return int64(d.rng.IntN(5) - 2)
	case 1:
		return float64(d.rng.IntN(5)-2) / 2
	case 2:
		return pick(d.rng, []string{"", "a", "ab", "B"})
	case 3:
		return d.rng.IntN(2) == 0
	}
	return time.Unix(1_700_000_000+int64(d.rng.IntN(3)), 0)
}

// attrValues are 0 to 2 values of declared names, of their types.
func (d *differ) attrValues() map[string]any {
	n := d.rng.IntN(3)
	if n == 0 {
		return nil
	}
	vs := map[string]any{}
	for range n {
		a := pick(d.rng, diffAttrDecls)
		for {
			v := d.attrValue()
			if t, _ := store.AttrTypeOf(v); t == a.Type {
				vs[a.Name] = v
				break
			}
		}
	}
	return vs
}

// attrConds are 0 or 1 conditions, most of them of a declared name with
// a value of a type it compares with.
func (d *differ) attrConds() []store.AttrCond {
	if d.rng.IntN(2) == 0 {
		return nil
	}
	names := []string{"n", "f", "s", "b", "t", "n", "f", "s", "undeclared"}
	ops := []store.AttrOp{store.AttrEq, store.AttrNe, store.AttrLt, store.AttrLe, store.AttrGt, store.AttrGe, store.AttrContains}
	return []store.AttrCond{{Name: pick(d.rng, names), Op: pick(d.rng, ops), Value: d.attrValue()}}
}

// compareAttrs compares the values of every run.
func (d *differ) compareAttrs(what string) {
	ctx := d.t.Context()
	ids := append(diffRuns, "ghost")
	a1, err1 := d.got.RunAttrs(ctx, ids)
	a2, err2 := d.ref.RunAttrs(ctx, ids)
	d.compare(what+": RunAttrs", a1, err1, a2, err2)
}
