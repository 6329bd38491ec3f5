package shape

import (
	"sort"
	"strconv"
)

// node is a schema being derived.
type node struct {
	dialect         bool     // write "$schema" (the top)
	defs            []prop   // "$defs" (the top)
	ref             string   // "$ref": "#" or "#/$defs/NAME"
	never           bool     // the schema false
	types           []string // nil: any type
	format          string
	min, max        string // integer bounds, as decimal text
	contentEncoding string
	items           *node
	checkedItems    int
	fixed           bool // a Go array: write checkedItems
	addl            *node
	propertyNames   *node
	props           []prop
	object          bool     // a struct: "properties" is written, even when empty
	fold            []string // nil: names match exactly; empty: "x-caseFold": true; else the precedence
	quoted          *node    // a ",string" field: its literal's schema
}

type prop struct {
	name string
	n    *node
}

// write appends the schema as compact JSON, keys sorted.
func (n *node) write(b []byte) []byte {
	if n.never {
		return append(b, "false"...)
	}
	w := objWriter{b: append(b, '{')}
	if len(n.defs) > 0 {
		defs := append([]prop(nil), n.defs...)
		sort.Slice(defs, func(i, j int) bool { return defs[i].name < defs[j].name })
		w.props("$defs", defs)
	}
	if n.ref != "" {
		w.str("$ref", n.ref)
	}
	if n.dialect {
		w.str("$schema", Dialect)
	}
	w.sub("additionalProperties", n.addl)
	if n.contentEncoding != "" {
		w.str("contentEncoding", n.contentEncoding)
	}
	if n.format != "" {
		w.str("format", n.format)
	}
	w.sub("items", n.items)
	if n.max != "" {
		w.raw("maximum", n.max)
	}
	if n.min != "" {
		w.raw("minimum", n.min)
	}
	if n.object {
		w.props("properties", n.props)
	}
	w.sub("propertyNames", n.propertyNames)
	n.writeType(&w)
	n.writeExtensions(&w)
	return append(w.b, '}')
}

func (n *node) writeType(w *objWriter) {
	if n.types == nil {
		return
	}
	if len(n.types) == 1 {
		w.str("type", n.types[0])
		return
	}
	w.list("type", n.types)
}

func (n *node) writeExtensions(w *objWriter) {
	switch {
	case n.fold == nil:
	case len(n.fold) == 0:
		w.raw("x-caseFold", "true")
	default:
		w.list("x-caseFold", n.fold)
	}
	if n.fixed {
		w.raw("x-checkedItems", strconv.Itoa(n.checkedItems))
	}
	w.sub("x-quoted", n.quoted)
}

// objWriter writes the members of a JSON object.
type objWriter struct {
	b     []byte
	comma bool
}

func (w *objWriter) key(k string) {
	if w.comma {
		w.b = append(w.b, ',')
	}
	w.comma = true
	w.b = appendString(w.b, k)
	w.b = append(w.b, ':')
}

func (w *objWriter) str(k, v string) { w.key(k); w.b = appendString(w.b, v) }
func (w *objWriter) raw(k, v string) { w.key(k); w.b = append(w.b, v...) }

func (w *objWriter) sub(k string, n *node) {
	if n != nil {
		w.key(k)
		w.b = n.write(w.b)
	}
}

// props writes an object of named schemas.
func (w *objWriter) props(k string, ps []prop) {
	w.key(k)
	w.b = append(w.b, '{')
	for i, p := range ps {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = appendString(w.b, p.name)
		w.b = append(w.b, ':')
		w.b = p.n.write(w.b)
	}
	w.b = append(w.b, '}')
}

func (w *objWriter) list(k string, vs []string) {
	w.key(k)
	w.b = append(w.b, '[')
	for i, v := range vs {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = appendString(w.b, v)
	}
	w.b = append(w.b, ']')
}
