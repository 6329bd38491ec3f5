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
	d := deriver{seen: map[reflect.Type]bool{}}
	b, err := json.Marshal(d.of(t))
	if err != nil { // cannot happen: the schema holds only maps, slices and strings
		return []byte("{}")
	}
	return b
}

type schema = map[string]any

type deriver struct {
	seen map[reflect.Type]bool // types being derived: a recursive type is unconstrained where it recurs
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface))
}

func (d *deriver) of(t reflect.Type) schema {
	if t == nil {
		return schema{}
	}
	if t.Kind() == reflect.Pointer {
		return nullable(d.of(t.Elem()))
	}
	switch {
	case implements(t, jsonUnmarshaler):
		return schema{}
	case implements(t, textUnmarshaler):
		return schema{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number"}
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !implements(t.Elem(), jsonUnmarshaler) && !implements(t.Elem(), textUnmarshaler) {
			return schema{"type": []string{"string", "null"}}
		}
		return schema{"type": []string{"array", "null"}, "items": d.of(t.Elem())}
	case reflect.Array:
		return schema{"type": "array", "items": d.of(t.Elem())}
	case reflect.Map:
		return schema{"type": []string{"object", "null"}, "additionalProperties": d.of(t.Elem())}
	case reflect.Struct:
		return d.object(t)
	}
	return schema{} // interfaces, and kinds encoding/json cannot decode
}

// nullable adds null to a schema's types (an unconstrained one allows it).
func nullable(s schema) schema {
	switch ty := s["type"].(type) {
	case string:
		if ty != "null" {
			s["type"] = []string{ty, "null"}
		}
	case []string:
		for _, n := range ty {
			if n == "null" {
				return s
			}
		}
		s["type"] = append(ty, "null")
	}
	return s
}

// object is the schema of a struct.
func (d *deriver) object(t reflect.Type) schema {
	if d.seen[t] {
		return schema{}
	}
	d.seen[t] = true
	defer delete(d.seen, t)
	props := schema{}
	d.fields(t, props)
	return schema{"type": "object", "properties": props}
}

// fields adds the properties of t's fields (and of its untagged embedded
// structs) to props. A name given twice keeps the first, as encoding/json
// keeps the shallowest.
func (d *deriver) fields(t reflect.Type, props schema) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				d.fields(et, props)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" || !hasTag {
			name = f.Name
		}
		if _, dup := props[name]; dup {
			continue
		}
		s := d.of(ft)
		if hasOption(opts, "string") && isScalar(ft) {
			s = schema{"type": "string"}
		}
		props[name] = s
	}
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
