// Package shape is the expected shape of a JSON value: a subset of JSON
// Schema derived from a Go type (Of, used by the guest SDK for a
// promise's value and a workflow's input) and checked against a value
// (Check, used by the host before it accepts a settlement or a run's
// input). A schema from Of admits exactly the values encoding/json
// decodes into a new value of the type, so a value the host accepts is
// one the guest can decode. The package has no dependencies beyond the
// standard library, so the guest SDK (built for wasip1) can import it.
//
// The subset (check.go has the rules of each keyword):
//   - "type": one name or a list of "object", "array", "string",
//     "number", "integer", "boolean", "null"; "integer" is a number
//     written without a fraction or an exponent;
//   - "properties", "required", "additionalProperties", "propertyNames",
//     "items";
//   - "minimum", "maximum", compared exactly (as decimals, not floats);
//   - "format": "int8" … "int64" and "uint8" … "uint64" (the text of a
//     number or of a string parses as that Go integer, with
//     strconv.ParseInt or ParseUint), "float32" and "float64" (every
//     number in the value, at any depth, parses with strconv.ParseFloat in
//     that size without overflow), "date-time" (a string Go's time.Time
//     decodes: RFC 3339) and "json-number" (a string holding a JSON number);
//   - "contentEncoding": "base64" (a string in standard base64, padded);
//   - "$defs" and "$ref" ("#/$defs/NAME"), for recursive types;
//   - the boolean schemas true and false;
//   - "$schema" at the top: a schema that has it is checked as it says; one
//     without it (what Of derived before it emitted "$schema") accepts null
//     at the top whatever it says;
//   - extensions for what encoding/json does that JSON Schema cannot say:
//     "x-caseFold" (property names also match ignoring case, as Go's
//     decoder matches keys: true, or the property names in the order in
//     which the first of several that fold alike wins), "x-checkedItems"
//     (only that many leading elements are decoded: a Go array; the rest
//     may be anything) and "x-quoted" (a ",string" field: a string whose
//     contents are a literal of that schema).
//
// Other keywords are ignored by Check.
package shape

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Dialect is the "$schema" of the schemas Of derives (JSON Schema 2020-12,
// the draft whose keywords they use).
const Dialect = "https://json-schema.org/draft/2020-12/schema"

// Of returns the JSON Schema of the values encoding/json decodes into a
// new value of type t, encoded as compact JSON with sorted keys (the same
// bytes for the same type, every time):
//   - every schema admits null, which Go decodes as "leave the zero value"
//     (a type with its own UnmarshalJSON is unconstrained: it decides);
//   - a struct is an object with the fields encoding/json fills as
//     properties (json tag names, "-" skipped, embedded structs promoted
//     by Go's rules, a name two fields claim dropped), matched also
//     ignoring case; no property is required and unknown ones are
//     allowed, as a missing field keeps its zero value and an unknown one
//     is ignored. A ",string" field is a string holding its literal;
//   - integers carry their Go width and range, floats theirs; []byte is a
//     base64 string (or an array of bytes); an array checks its first
//     len elements; a map's keys are checked when its key type is an
//     integer (a map with a key type Go cannot decode takes only null);
//   - an empty interface takes any value whose numbers are float64s, an
//     interface with methods only null; a TextUnmarshaler is a string,
//     time.Time a date-time, json.Number a number or a string holding one;
//   - a type that contains itself is a "$defs" entry named by the type,
//     referred to with "$ref".
//
// A nil t (the type of a nil interface) is unconstrained.
func Of(t reflect.Type) []byte {
	d := deriver{root: t, names: map[reflect.Type]string{}, used: map[string]bool{}, done: map[reflect.Type]bool{}}
	root := d.of(t)
	root.dialect = true
	root.defs = d.defs
	return root.write(make([]byte, 0, 128))
}

type deriver struct {
	root  reflect.Type            // the type at the top: "$ref": "#" where it recurs
	stack []reflect.Type          // named types being derived
	names map[reflect.Type]string // the $defs name of each other type that contains itself
	used  map[string]bool         // the names given
	done  map[reflect.Type]bool   // types whose schema is in defs
	defs  []prop
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType      = reflect.TypeFor[json.Number]()
	timeType        = reflect.TypeFor[time.Time]()
)

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface))
}

// of returns the schema of t; a named type that contains itself becomes
// a reference to its $defs entry.
func (d *deriver) of(t reflect.Type) *node {
	if t == nil {
		return &node{}
	}
	if t.Name() == "" {
		return d.build(t)
	}
	switch {
	case d.done[t]:
		return &node{ref: defRef(d.names[t])}
	case slices.Contains(d.stack, t) && t == d.root:
		return &node{ref: "#"}
	case slices.Contains(d.stack, t):
		return &node{ref: defRef(d.name(t))}
	}
	d.stack = append(d.stack, t)
	n := d.build(t)
	d.stack = d.stack[:len(d.stack)-1]
	if name, ok := d.names[t]; ok {
		d.defs = append(d.defs, prop{name, n})
		d.done[t] = true
		return &node{ref: defRef(name)}
	}
	return n
}

// name returns the $defs name of t: its type name, made unique.
func (d *deriver) name(t reflect.Type) string {
	if n, ok := d.names[t]; ok {
		return n
	}
	n := t.String()
	for i := 2; d.used[n]; i++ {
		n = t.String() + "~" + strconv.Itoa(i)
	}
	d.names[t], d.used[n] = n, true
	return n
}

// defRef is the "$ref" of a $defs entry: a JSON pointer.
func defRef(name string) string {
	return "#/$defs/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

func of(types ...string) *node { return &node{types: types} }

// build derives the schema of t itself.
func (d *deriver) build(t reflect.Type) *node {
	switch {
	case t.Kind() == reflect.Pointer:
		return d.of(t.Elem()) // null sets the pointer to nil; every schema admits null
	case t.Kind() == reflect.Interface && t.NumMethod() == 0:
		return &node{format: "float64"} // numbers decode as float64
	case t.Kind() == reflect.Interface:
		return of("null") // Go cannot decode into a nil interface with methods
	case t == timeType:
		return &node{types: []string{"string", "null"}, format: "date-time"}
	case implements(t, jsonUnmarshaler):
		return &node{}
	case implements(t, textUnmarshaler):
		return of("string", "null")
	case t == numberType:
		return &node{types: []string{"number", "string", "null"}, format: "json-number"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return of("boolean", "null")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return integer(false, t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return integer(true, t.Bits())
	case reflect.Float32, reflect.Float64:
		return &node{types: []string{"number", "null"}, format: "float" + strconv.Itoa(t.Bits())}
	case reflect.String:
		return of("string", "null")
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // a string is base64; an array is decoded byte by byte
			return &node{types: []string{"string", "array", "null"}, contentEncoding: "base64", items: d.of(t.Elem())}
		}
		return &node{types: []string{"array", "null"}, items: d.of(t.Elem())}
	case reflect.Array:
		return &node{types: []string{"array", "null"}, items: d.of(t.Elem()), checkedItems: t.Len(), fixed: true}
	case reflect.Map:
		return d.mapOf(t)
	case reflect.Struct:
		return d.object(t)
	}
	return of("null") // channels, functions, complex numbers: Go decodes only null into them
}

// integer is the schema of a Go integer of the given width.
func integer(unsigned bool, bits int) *node {
	n := &node{types: []string{"integer", "null"}}
	if unsigned {
		n.format = "uint" + strconv.Itoa(bits)
		n.min, n.max = "0", strconv.FormatUint(1<<bits-1, 10) // 1<<64 is 0 in a uint64: the max is all ones
		return n
	}
	n.format = "int" + strconv.Itoa(bits)
	n.min, n.max = strconv.FormatInt(-1<<(bits-1), 10), strconv.FormatInt(1<<(bits-1)-1, 10)
	return n
}

// mapOf is the schema of a map: its values, and its keys when Go parses
// them (integers, time.Time).
func (d *deriver) mapOf(t reflect.Type) *node {
	n := &node{types: []string{"object", "null"}, addl: d.of(t.Elem())}
	kt := t.Key()
	switch {
	case kt == timeType:
		n.propertyNames = &node{format: "date-time"}
	case reflect.PointerTo(kt).Implements(textUnmarshaler):
		// its UnmarshalText decides
	case kt.Kind() == reflect.String:
	case kt.Kind() >= reflect.Int && kt.Kind() <= reflect.Int64:
		n.propertyNames = &node{format: "int" + strconv.Itoa(kt.Bits())}
	case kt.Kind() >= reflect.Uint && kt.Kind() <= reflect.Uintptr:
		n.propertyNames = &node{format: "uint" + strconv.Itoa(kt.Bits())}
	default:
		return of("null") // encoding/json refuses an object for this key type
	}
	return n
}

// object is the schema of a struct.
func (d *deriver) object(t reflect.Type) *node {
	n := &node{types: []string{"object", "null"}, object: true}
	fields := structFields(t)
	folds := map[string]bool{}
	clash := false
	for _, f := range fields {
		var s *node
		switch {
		case f.blocked:
			s = &node{never: true}
		case f.quoted:
			s = &node{types: []string{"string", "null"}, quoted: d.of(f.typ)}
		default:
			s = d.of(f.typ)
		}
		n.props = append(n.props, prop{f.name, s})
		k := string(foldName([]byte(f.name)))
		clash = clash || folds[k]
		folds[k] = true
	}
	if len(fields) > 0 {
		n.fold = []string{}
		if clash { // the first of the names that fold alike wins: say which
			for _, f := range fields {
				n.fold = append(n.fold, f.name)
			}
		}
	}
	sort.SliceStable(n.props, func(i, j int) bool { return n.props[i].name < n.props[j].name })
	return n
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
