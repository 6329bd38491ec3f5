package shape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MismatchError reports a value that does not have the expected shape.
type MismatchError struct {
	Path   string // where in the value, "$" for the value itself (e.g. "$.items[2].qty")
	Reason string // e.g. "want integer or null, got string \"3\""
	folded bool   // Reason says a key matched its property ignoring case
}

func (e *MismatchError) Error() string { return "at " + e.Path + ": " + e.Reason }

// Check reports whether value (JSON) has the shape schema describes: nil,
// or a *MismatchError naming the first place where it does not, or an
// error when the schema or the value is not valid. The value is read as
// a stream, so each occurrence of a key given twice is checked, as
// encoding/json decodes each in turn. A schema without "$schema" (from an
// older Of) accepts null at the top whatever it says, as before; one with
// it is checked as it says. An empty schema accepts everything.
func Check(schema, value []byte) error {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil
	}
	root, err := parse(schema)
	if err != nil {
		return fmt.Errorf("the schema is not valid: %w", err)
	}
	var raw json.RawMessage
	if err := json.Unmarshal(value, &raw); err != nil {
		return fmt.Errorf("the value is not valid JSON: %w", err)
	}
	w := walker{s: scanner{b: value}}
	w.s.ws()
	if root != nil && root.Dialect == "" && w.s.peek() == 'n' {
		return nil
	}
	return w.value(root, "")
}

// rule is a parsed schema. Its exported fields are the keywords;
// parse resolves the rest.
type rule struct {
	Ref                  string           `json:"$ref"`
	Defs                 map[string]*rule `json:"$defs"`
	Dialect              string           `json:"$schema"`
	Type                 types            `json:"type"`
	Format               string           `json:"format"`
	Minimum              *json.Number     `json:"minimum"`
	Maximum              *json.Number     `json:"maximum"`
	ContentEncoding      string           `json:"contentEncoding"`
	Properties           map[string]*rule `json:"properties"`
	Required             []string         `json:"required"`
	AdditionalProperties *rule            `json:"additionalProperties"`
	PropertyNames        *rule            `json:"propertyNames"`
	Items                *rule            `json:"items"`
	CheckedItems         *int             `json:"x-checkedItems"`
	CaseFold             caseFold         `json:"x-caseFold"`
	Quoted               *rule            `json:"x-quoted"`

	never    bool              // the schema false
	target   *rule             // what $ref resolves to
	folded   map[string]string // x-caseFold: folded name -> property
	min, max *decimal
}

// UnmarshalJSON reads a schema: an object or a boolean.
func (r *rule) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*r = rule{}
		return nil
	case "false":
		*r = rule{never: true}
		return nil
	}
	type plain rule
	return json.Unmarshal(b, (*plain)(r))
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

// caseFold is "x-caseFold": true, or the property names in precedence
// order.
type caseFold struct {
	on    bool
	order []string
}

func (c *caseFold) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &c.on); err == nil {
		return nil
	}
	if err := json.Unmarshal(b, &c.order); err != nil {
		return fmt.Errorf(`"x-caseFold" is neither a boolean nor a list of names`)
	}
	c.on = true
	return nil
}

// parse reads a schema and resolves its references, bounds and folds.
func parse(schema []byte) (*rule, error) {
	var root *rule
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, err
	}
	l := linker{root: root, done: map[*rule]bool{}}
	if err := l.link(root); err != nil {
		return nil, err
	}
	return root, nil
}

type linker struct {
	root *rule
	done map[*rule]bool
}

// link prepares r and every schema inside it.
func (l *linker) link(r *rule) error {
	if r == nil || l.done[r] {
		return nil
	}
	l.done[r] = true
	if r.Ref != "" {
		t, err := l.resolve(r)
		if err != nil {
			return err
		}
		r.target = t
	}
	var err error
	if r.min, err = bound("minimum", r.Minimum); err != nil {
		return err
	}
	if r.max, err = bound("maximum", r.Maximum); err != nil {
		return err
	}
	if r.CaseFold.on {
		r.folded = folds(r)
	}
	for _, sub := range r.Defs {
		if err := l.link(sub); err != nil {
			return err
		}
	}
	for _, sub := range r.Properties {
		if err := l.link(sub); err != nil {
			return err
		}
	}
	for _, sub := range []*rule{r.AdditionalProperties, r.PropertyNames, r.Items, r.Quoted} {
		if err := l.link(sub); err != nil {
			return err
		}
	}
	return nil
}

// resolve follows r's "$ref" (and the refs it leads to) to a schema that
// is not a reference.
func (l *linker) resolve(r *rule) (*rule, error) {
	seen := map[*rule]bool{}
	for r.Ref != "" {
		if seen[r] {
			return nil, fmt.Errorf("$ref %q refers to itself", r.Ref)
		}
		seen[r] = true
		next, err := l.lookup(r.Ref)
		if err != nil {
			return nil, err
		}
		if next == nil {
			return nil, nil // a null schema: unconstrained
		}
		r = next
	}
	return r, nil
}

// lookup finds a local reference: "#" or "#/$defs/NAME".
func (l *linker) lookup(ref string) (*rule, error) {
	if ref == "#" {
		return l.root, nil
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok || strings.Contains(name, "/") {
		return nil, fmt.Errorf("$ref %q: only \"#\" and \"#/$defs/NAME\" are supported", ref)
	}
	name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
	t, ok := l.root.Defs[name]
	if !ok {
		return nil, fmt.Errorf("$ref %q: no such entry in $defs", ref)
	}
	return t, nil
}

func bound(kw string, n *json.Number) (*decimal, error) {
	if n == nil {
		return nil, nil
	}
	d, ok := parseDecimal(string(*n))
	if !ok {
		return nil, fmt.Errorf("%s %q is not a number", kw, *n)
	}
	return &d, nil
}

// folds maps each folded property name to the property a key that
// folds to it decodes into: the first in "x-caseFold"'s order, else in
// sorted order.
func folds(r *rule) map[string]string {
	order := r.CaseFold.order
	if order == nil {
		for name := range r.Properties {
			order = append(order, name)
		}
		sort.Strings(order)
	}
	m := make(map[string]string, len(order))
	for _, name := range order {
		if _, ok := r.Properties[name]; !ok {
			continue
		}
		k := string(foldName([]byte(name)))
		if _, dup := m[k]; !dup {
			m[k] = name
		}
	}
	return m
}

// resolved is the schema r stands for: its $ref's target, or itself.
func (r *rule) resolved() *rule {
	if r != nil && r.Ref != "" {
		return r.target
	}
	return r
}

// allows reports whether the schema's types admit a value of type got.
// "integer" admits only numbers written as integers: encoding/json does
// not decode 1.0 or 1e3 into a Go integer.
func (r *rule) allows(got string) bool {
	if len(r.Type) == 0 {
		return true
	}
	for _, t := range r.Type {
		if t == got || (t == "number" && got == "integer") {
			return true
		}
	}
	return false
}

// want is the reason for a value of the wrong type.
func (r *rule) want(got string) string {
	return "want " + strings.Join(r.Type, " or ") + ", got " + got
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
