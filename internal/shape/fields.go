package shape

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// field is a struct field as encoding/json decodes into it: the rules of
// its typeFields (encode.go), which this mirrors so that a schema has
// exactly the properties a decode fills.
type field struct {
	name    string
	tagged  bool         // the name came from a json tag
	index   []int        // the path of field indexes from the struct
	typ     reflect.Type // the field's type
	quoted  bool         // tagged ",string" on a scalar: the value is a JSON string holding the literal
	blocked bool         // reached through an unexported embedded pointer: any value fails the decode
}

// structFields returns the fields of struct type t that encoding/json
// decodes, in the order of their index paths (the order in which, among
// names that fold to the same, the first wins).
func structFields(t reflect.Type) []field {
	type queued struct {
		typ     reflect.Type
		index   []int
		blocked bool
	}
	var fields []field
	current, next := []queued{}, []queued{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, q := range current {
			if visited[q.typ] {
				continue
			}
			visited[q.typ] = true
			for i := 0; i < q.typ.NumField(); i++ {
				sf := q.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(slices.Clip(q.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f := field{name: name, tagged: name != "", index: index, typ: sf.Type, blocked: q.blocked,
						quoted: hasOption(opts, "string") && isScalar(ft)}
					if f.name == "" {
						f.name = sf.Name
					}
					fields = append(fields, f)
					if count[q.typ] > 1 {
						fields = append(fields, f) // a second copy, so that the name is dropped below
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					// An unexported embedded pointer cannot be set: the decode
					// fails on every field reached through it.
					blocked := q.blocked || (sf.Type.Kind() == reflect.Pointer && !sf.IsExported())
					next = append(next, queued{typ: ft, index: index, blocked: blocked})
				}
			}
		}
	}
	return dominant(fields)
}

// dominant keeps, for each name, the field Go's embedding rules (with json
// tags) choose, drops names that two fields at the same depth claim, and
// returns the fields in index order.
func dominant(fields []field) []field {
	slices.SortFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return +1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		if j-i == 1 || len(fields[i].index) != len(fields[i+1].index) || fields[i].tagged != fields[i+1].tagged {
			out = append(out, fields[i])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })
	return out
}

// validTag reports whether a json tag name is used as the name
// (encoding/json's isValidTag).
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
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

// isScalar reports whether a ",string" option applies to a field of kind
// t: booleans, numbers and strings.
func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}
