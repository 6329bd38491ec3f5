package shape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// rule is a parsed schema of the subset Of emits.
type rule struct {
	Type                 types            `json:"type"`
	Properties           map[string]*rule `json:"properties"`
	Required             []string         `json:"required"`
	AdditionalProperties *rule            `json:"additionalProperties"`
	Items                *rule            `json:"items"`
}

// types is the "type" keyword: one name or a list (empty: any type).
type types []string

func (t *types) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = types{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf(`"type" is neither a name nor a list of names`)
	}
	*t = many
	return nil
}

// MismatchError reports a value that does not have the expected shape.
type MismatchError struct {
	Path   string // where in the value, "$" for the value itself (e.g. "$.items[2].qty")
	Reason string // e.g. "want integer, got string"
}

func (e *MismatchError) Error() string { return "at " + e.Path + ": " + e.Reason }

// Check reports whether value (JSON) has the shape schema (from Of)
// describes: nil, or a *MismatchError naming the first place where it
// does not, or an error when the schema or the value is not valid JSON.
// A null value at the top is accepted whatever the schema, since it
// decodes into a Go value as the zero value; inside the value, null is
// accepted only where the schema allows it. An empty schema accepts
// everything.
func Check(schema, value []byte) error {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil
	}
	var n rule
	if err := json.Unmarshal(schema, &n); err != nil {
		return fmt.Errorf("the schema is not valid: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("the value is not valid JSON: %w", err)
	}
	if v == nil {
		return nil
	}
	return n.check("$", v)
}

func (n *rule) check(path string, v any) error {
	if n == nil {
		return nil
	}
	got := typeOf(v)
	if len(n.Type) > 0 && !n.allows(got) {
		return &MismatchError{Path: path, Reason: fmt.Sprintf("want %s, got %s", strings.Join(n.Type, " or "), describe(got, v))}
	}
	switch v := v.(type) {
	case map[string]any:
		return n.checkObject(path, v)
	case []any:
		for i, e := range v {
			if err := n.Items.check(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (n *rule) checkObject(path string, v map[string]any) error {
	for _, r := range n.Required {
		if _, ok := v[r]; !ok {
			return &MismatchError{Path: path, Reason: fmt.Sprintf("missing required property %q", r)}
		}
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sub, ok := n.Properties[k]
		if !ok {
			sub = n.AdditionalProperties
		}
		if err := sub.check(path+member(k), v[k]); err != nil {
			return err
		}
	}
	return nil
}

// allows reports whether the schema's types admit a value of type got.
// "integer" admits only numbers written as integers: encoding/json does
// not decode 1.0 or 1e3 into a Go integer.
func (n *rule) allows(got string) bool {
	for _, t := range n.Type {
		switch {
		case t == got:
			return true
		case t == "number" && got == "integer":
			return true
		}
	}
	return false
}

// typeOf is the JSON type of a decoded value; a number is "integer" when
// written without a fraction or an exponent.
func typeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "number"
		}
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// describe names a value for a message: its type and a short excerpt.
func describe(got string, v any) string {
	switch v := v.(type) {
	case string:
		s := v
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return got + " " + strconv.Quote(s)
	case json.Number:
		return got + " " + string(v)
	case bool:
		return got + " " + strconv.FormatBool(v)
	}
	return got
}

// member is the path step of property k.
func member(k string) string {
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return "[" + strconv.Quote(k) + "]"
		}
	}
	if k == "" {
		return `[""]`
	}
	return "." + k
}
