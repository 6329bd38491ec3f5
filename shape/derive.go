// Package shape is the expected shape of a JSON value: a small subset of
// JSON Schema derived from a Go type (Of, used by the guest SDK for a
// promise's value and a workflow's input) and checked against a value
// (Check, used by the host before it accepts a settlement or a run's
// input). The package has no dependencies beyond the standard library, so
// the guest SDK (built for wasip1) can import it.
//
// The subset: "type" (one name or a list of "object", "array", "string",
// "number", "integer", "boolean", "null"), "properties", "required",
// "additionalProperties" (a schema) and "items". Other keywords are
// ignored by Check. "integer" means a JSON number written without a
// fraction or an exponent, which is what encoding/json decodes into a Go
// integer.
package shape

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Of returns the JSON Schema of values of type t as encoding/json encodes
// and decodes them, encoded as compact JSON with sorted keys (the same
// bytes for the same type, every time):
//   - a struct is an object with its exported fields as properties (their
//     json tag names; "-" skipped; embedded structs without a tag
//     flattened); no property is required and unknown ones are allowed,
//     as encoding/json leaves a missing field at its zero value and
//     ignores an unknown one;
//   - a map is an object whose additionalProperties are the element's
//     schema; a slice is an array (or null), an array an array, []byte a
//     string;
//   - strings, booleans, floats and integers are their JSON types (a field
//     tagged ",string" is a string);
//   - a pointer is its element's schema or null;
//   - an interface, and a type with its own UnmarshalJSON, is
//     unconstrained ({}); a type with UnmarshalText is a string.
//
// A nil t (the type of a nil interface) is unconstrained.
func Of(t reflect.Type) []byte {
	var d deriver
	return d.of(t).write(make([]byte, 0, 128))
}

// node is a schema being derived; nil types mean unconstrained.
type node struct {
	types  []string
	items  *node // arrays
	addl   *node // maps: additionalProperties
	props  []prop
	object bool // a struct: "properties" is written, even when empty
}

type prop struct {
	name string
	n    *node
}

type deriver struct {
	seen []reflect.Type // structs being derived: a recursive type is unconstrained where it recurs
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface))
}

func of(types ...string) *node { return &node{types: types} }

func (d *deriver) of(t reflect.Type) *node {
	if t == nil {
		return &node{}
	}
	if t.Kind() == reflect.Pointer {
		return nullable(d.of(t.Elem()))
	}
	switch {
	case implements(t, jsonUnmarshaler):
		return &node{}
	case implements(t, textUnmarshaler):
		return of("string")
	}
	switch t.Kind() {
	case reflect.Bool:
		return of("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return of("integer")
	case reflect.Float32, reflect.Float64:
		return of("number")
	case reflect.String:
		return of("string")
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !implements(t.Elem(), jsonUnmarshaler) && !implements(t.Elem(), textUnmarshaler) {
			return of("string", "null")
		}
		return &node{types: []string{"array", "null"}, items: d.of(t.Elem())}
	case reflect.Array:
		return &node{types: []string{"array"}, items: d.of(t.Elem())}
	case reflect.Map:
		return &node{types: []string{"object", "null"}, addl: d.of(t.Elem())}
	case reflect.Struct:
		return d.object(t)
	}
	return &node{} // interfaces, and kinds encoding/json cannot decode
}

// nullable adds null to a schema's types (an unconstrained one allows it).
func nullable(n *node) *node {
	if n.types == nil || slices.Contains(n.types, "null") {
		return n
	}
	n.types = append(n.types[:len(n.types):len(n.types)], "null")
	return n
}

// object is the schema of a struct.
func (d *deriver) object(t reflect.Type) *node {
	if slices.Contains(d.seen, t) {
		return &node{}
	}
	d.seen = append(d.seen, t)
	defer func() { d.seen = d.seen[:len(d.seen)-1] }()
	n := &node{types: []string{"object"}, object: true}
	d.fields(t, n)
	sort.SliceStable(n.props, func(i, j int) bool { return n.props[i].name < n.props[j].name })
	return n
}

// fields adds the properties of t's fields (and of its untagged embedded
// structs) to n. A name given twice keeps the first, as encoding/json
// keeps the shallowest.
func (d *deriver) fields(t reflect.Type, n *node) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				d.fields(et, n)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" || !hasTag {
			name = f.Name
		}
		if slices.ContainsFunc(n.props, func(p prop) bool { return p.name == name }) {
			continue
		}
		s := d.of(f.Type)
		if hasOption(opts, "string") && isScalar(f.Type) {
			s = of("string")
		}
		n.props = append(n.props, prop{name, s})
	}
}

// write appends the schema as compact JSON, keys sorted.
func (n *node) write(b []byte) []byte {
	b = append(b, '{')
	comma := false
	key := func(k string) {
		if comma {
			b = append(b, ',')
		}
		comma = true
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
	}
	if n.addl != nil {
		key("additionalProperties")
		b = n.addl.write(b)
	}
	if n.items != nil {
		key("items")
		b = n.items.write(b)
	}
	if n.object {
		key("properties")
		b = append(b, '{')
		for i, p := range n.props {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p.name)
			b = append(b, ':')
			b = p.n.write(b)
		}
		b = append(b, '}')
	}
	if n.types != nil {
		key("type")
		if len(n.types) == 1 {
			b = appendString(b, n.types[0])
		} else {
			b = append(b, '[')
			for i, ty := range n.types {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, ty)
			}
			b = append(b, ']')
		}
	}
	return append(b, '}')
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}
