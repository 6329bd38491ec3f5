package shape

import (
	"fmt"
	"strconv"
	"strings"
)

// walker checks a value against a schema while it scans the value.
type walker struct {
	s    scanner
	path []step // where the scan is, for messages
}

// step is one step of a path: a key, or an index (key "" and index >= 0).
type step struct {
	key   string
	index int // -1 for a key
}

func (w *walker) fail(reason string) *MismatchError {
	var b strings.Builder
	b.WriteString("$")
	for _, s := range w.path {
		if s.index >= 0 {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		} else {
			b.WriteString(member(s.key))
		}
	}
	return &MismatchError{Path: b.String(), Reason: reason}
}

// deepRules are the schemas of a value under an empty interface: any
// value, with numbers Go can hold in the float type.
var deepRules = map[string]*rule{"float32": {Format: "float32"}, "float64": {Format: "float64"}}

// value checks the next value against r (nil: anything). deep is the
// float format an unconstrained value's numbers must have, set under a
// schema with a float format (an empty interface).
func (w *walker) value(r *rule, deep string) error {
	r = r.resolved()
	if r == nil {
		if deep == "" {
			w.s.skip()
			return nil
		}
		r = deepRules[deep]
	}
	if r.never {
		w.s.skip()
		return w.fail("want no value (the schema is false: the decode fails on any value here)")
	}
	deep = ""
	if _, ok := floatFormat(r.Format); ok {
		deep = r.Format
	}
	switch w.s.peek() {
	case '{':
		return w.object(r, deep)
	case '[':
		return w.array(r, deep)
	case '"':
		return w.str(r, w.s.str())
	case 't', 'f', 'n':
		typ, got := "boolean", "boolean "+w.s.literal()
		if got == "boolean null" {
			typ, got = "null", "null"
		}
		if !r.allows(typ) {
			return w.fail(r.want(got))
		}
		return nil
	}
	if reason := numberRules(r, w.s.number(), false); reason != "" {
		return w.fail(reason)
	}
	return nil
}

func (w *walker) str(r *rule, lit []byte) error {
	if !r.allows("string") {
		return w.fail(r.want(describeString(unquote(lit))))
	}
	if reason := stringRules(r, lit); reason != "" {
		return w.fail(reason)
	}
	if r.Quoted != nil {
		if reason := quotedRules(r.Quoted, unquote(lit)); reason != "" {
			return w.fail(reason)
		}
	}
	return nil
}

func (w *walker) array(r *rule, deep string) error {
	if !r.allows("array") {
		w.s.skip()
		return w.fail(r.want("array"))
	}
	w.s.next() // [
	if w.s.peek() == ']' {
		w.s.next()
		return nil
	}
	for i := 0; ; i++ {
		sub, d := r.Items, deep
		if r.CheckedItems != nil && i >= *r.CheckedItems { // a Go array skips the elements past its length
			sub, d = nil, ""
		}
		w.path = append(w.path, step{index: i})
		if err := w.value(sub, d); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
		if w.s.next() == ']' {
			return nil
		}
	}
}

func (w *walker) object(r *rule, deep string) error {
	if !r.allows("object") {
		w.s.skip()
		return w.fail(r.want("object"))
	}
	w.s.next() // {
	var seen map[string]bool
	if len(r.Required) > 0 {
		seen = map[string]bool{}
	}
	for w.s.peek() != '}' {
		lit := w.s.str()
		key := unquote(lit)
		w.s.next() // :
		w.path = append(w.path, step{key: key, index: -1})
		if reason := keyRules(r.PropertyNames, lit); reason != "" {
			return w.fail("property name: " + reason)
		}
		sub, name, folded := r.property(key)
		if seen != nil && name != "" {
			seen[name] = true
		}
		if err := w.value(sub, deep); err != nil {
			if mm, ok := err.(*MismatchError); ok && folded && !mm.folded {
				mm.Reason += fmt.Sprintf(" (Go decodes key %q into property %q, ignoring case)", key, name)
				mm.folded = true
			}
			return err
		}
		w.path = w.path[:len(w.path)-1]
		if w.s.peek() == ',' {
			w.s.next()
		}
	}
	w.s.next() // }
	for _, name := range r.Required {
		if !seen[name] {
			return w.fail(fmt.Sprintf("missing required property %q", name))
		}
	}
	return nil
}

// property returns the schema of the member key: the property of that
// name, else (with x-caseFold) the one it folds to, else
// additionalProperties; name is the property's name ("" for none).
func (r *rule) property(key string) (sub *rule, name string, folded bool) {
	if s, ok := r.Properties[key]; ok {
		return s, key, false
	}
	if r.folded != nil {
		if name, ok := r.folded[string(foldName([]byte(key)))]; ok {
			return r.Properties[name], name, true
		}
	}
	return r.AdditionalProperties, "", false
}

// keyRules returns why a property name breaks propertyNames ("" if it
// does not).
func keyRules(r *rule, lit []byte) string {
	r = r.resolved()
	switch {
	case r == nil:
		return ""
	case r.never:
		return "want no property (propertyNames is false)"
	case !r.allows("string"):
		return r.want(describeString(unquote(lit)))
	}
	return stringRules(r, lit)
}

// describeString names a string for a message: a short excerpt.
func describeString(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return "string " + strconv.Quote(s)
}
