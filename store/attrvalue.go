package store

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// TypedAttrs checks values given for a run's search attributes against
// the declarations and returns them as a store keeps them (AttrTypeOf).
// A value may be given as a Go value or as encoding/json decodes one
// (with UseNumber or without): an int as an integer number, a float as
// any number, a bool, a string (of at most MaxAttrText bytes), a time as
// a time.Time or an RFC 3339 string. An undeclared name or a value of
// the wrong type is an error naming the attribute and the rule.
func TypedAttrs(decls []AttrDecl, vs map[string]any) (map[string]any, error) {
	types := make(map[string]AttrType, len(decls))
	for _, d := range decls {
		types[d.Name] = d.Type
	}
	out := make(map[string]any, len(vs))
	for _, name := range slices.Sorted(maps.Keys(vs)) { // the first error is the same every time
		t, ok := types[name]
		if !ok {
			return nil, fmt.Errorf("search attribute %q is not declared (skein attribute create %s --type T)", name, name)
		}
		v, err := typedAttr(t, vs[name])
		if err != nil {
			return nil, fmt.Errorf("search attribute %q is a %s: %w", name, t, err)
		}
		if s, ok := v.(string); ok && len(s) > MaxAttrText {
			return nil, fmt.Errorf("search attribute %q: the value is %d bytes (limit %d)", name, len(s), MaxAttrText)
		}
		if s, ok := v.(string); ok && !ValidText(s) {
			return nil, fmt.Errorf("search attribute %q: %w", name, CheckText("the value", s))
		}
		out[name] = v
	}
	return out, nil
}

// typedAttr is v as a value of type t.
func typedAttr(t AttrType, v any) (any, error) {
	switch t {
	case AttrString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case AttrBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case AttrInt:
		return attrInt(v)
	case AttrFloat:
		return attrFloat(v)
	case AttrTime:
		switch v := v.(type) {
		case time.Time:
			return time.Unix(0, v.UnixNano()), nil
		case string:
			tm, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, fmt.Errorf("%q is not an RFC 3339 time", v)
			}
			return time.Unix(0, tm.UnixNano()), nil
		}
	}
	return nil, fmt.Errorf("got %s", describe(v))
}

func attrInt(v any) (any, error) {
	switch v := v.(type) {
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case int64:
		return v, nil
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i, nil
		}
		return nil, fmt.Errorf("%s is not an integer of 64 bits", v)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), nil
		}
		return nil, fmt.Errorf("%v is not an integer", v)
	}
	return nil, fmt.Errorf("got %s", describe(v))
}

func attrFloat(v any) (any, error) {
	var f float64
	switch v := v.(type) {
	case float64:
		f = v
	case float32:
		f = float64(v)
	case int:
		f = float64(v)
	case int64:
		f = float64(v)
	case json.Number:
		var err error
		if f, err = v.Float64(); err != nil {
			return nil, fmt.Errorf("%s is not a number", v)
		}
	default:
		return nil, fmt.Errorf("got %s", describe(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v is not a finite number", f)
	}
	return f, nil
}

// describe names the kind of a value for an error.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %.40q", v)
	case bool:
		return fmt.Sprintf("the bool %v", v)
	case json.Number, float64, float32, int, int32, int64:
		return fmt.Sprintf("the number %v", v)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

// AttrsJSON is values as JSON: an object by name, a time as an RFC 3339
// string in UTC with nanoseconds, the other values as themselves. It is
// what the API shows and what the journal records of an attributes op.
func AttrsJSON(vs map[string]any) []byte {
	m := make(map[string]any, len(vs))
	for k, v := range vs {
		m[k] = AttrsJSONValue(v)
	}
	b, _ := json.Marshal(m) // strings, numbers (finite) and bools only
	return b
}

// AttrsJSONValue is a value as AttrsJSON writes it: a time as an RFC
// 3339 string in UTC with nanoseconds, any other value as it is.
func AttrsJSONValue(v any) any {
	if t, ok := v.(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return v
}

// ParseAttrValue reads the text s (a command line's NAME=VALUE, a query
// parameter) as a value of type t: an integer, a number, true or false,
// an RFC 3339 time, or any text for a string.
func ParseAttrValue(t AttrType, s string) (any, error) {
	var v any = s
	switch t {
	case AttrInt:
		v = json.Number(s)
	case AttrFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		v = f
	case AttrBool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", s)
		}
		v = b
	}
	return typedAttr(t, v)
}
