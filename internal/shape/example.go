package shape

import (
	"encoding/base64"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Example returns a plain JSON value that schema admits, chosen with r:
// every property of an object is set (with a value of one of its
// non-null types), booleans and small integers within the bounds are
// drawn, strings are short words, dates are in 2026, base64 is valid,
// arrays and maps hold up to three elements. It is what `skein check`
// settles a typed promise with when no value is given, so that the code
// after the promise runs with a value its type decodes (Check accepts it;
// where it cannot make one, it returns null). A schema that does not
// parse gives null.
func Example(schema []byte, r *rand.Rand) []byte {
	root, err := parse(schema)
	if err != nil || root == nil {
		return []byte("null")
	}
	for range 8 {
		var b strings.Builder
		g := exampler{r: r}
		g.value(&b, root, 0)
		if v := []byte(b.String()); Check(schema, v) == nil {
			return v
		}
	}
	return []byte("null")
}

// exampleDepth bounds how deep Example nests (recursive types).
const exampleDepth = 6

// exampleWords are the strings Example draws.
var exampleWords = []string{"ana", "bo", "carmen", "dev", "ok", "red", "x-1", "order-7"}

type exampler struct{ r *rand.Rand }

func (g *exampler) value(b *strings.Builder, n *rule, depth int) {
	n = n.resolved()
	if n == nil || depth > exampleDepth {
		b.WriteString("null")
		return
	}
	if n.never {
		b.WriteString("null")
		return
	}
	if n.Quoted != nil {
		var inner strings.Builder
		g.value(&inner, n.Quoted, depth+1)
		b.WriteString(strconv.Quote(inner.String()))
		return
	}
	switch g.pickType(n) {
	case "null":
		b.WriteString("null")
	case "boolean":
		b.WriteString(strconv.FormatBool(g.r.IntN(2) == 0))
	case "integer":
		b.WriteString(g.integer(n))
	case "number":
		b.WriteString(strconv.FormatFloat(float64(g.r.IntN(2000))/8-125, 'g', -1, 64))
	case "string":
		b.WriteString(strconv.Quote(g.str(n)))
	case "array":
		g.array(b, n, depth)
	case "object":
		g.object(b, n, depth)
	default: // any type
		b.WriteString(strconv.Quote(exampleWords[g.r.IntN(len(exampleWords))]))
	}
}

// pickType draws one of the schema's types, null only when it is the one.
func (g *exampler) pickType(n *rule) string {
	var ts []string
	for _, t := range n.Type {
		if t != "null" {
			ts = append(ts, t)
		}
	}
	if n.ContentEncoding == "base64" && slices.Contains(ts, "string") {
		return "string" // []byte: base64 reads better than an array of bytes
	}
	switch {
	case len(ts) > 0:
		return ts[g.r.IntN(len(ts))]
	case len(n.Type) > 0:
		return "null"
	}
	return ""
}

// integer is a small integer within the schema's bounds.
func (g *exampler) integer(n *rule) string {
	lo, hi := int64(-50), int64(100)
	if n.min != nil {
		if v, ok := decimalInt(*n.min); ok && v > lo {
			lo = v
		}
		if v, ok := decimalInt(*n.min); ok && v > hi {
			hi = v // a minimum past the usual range: use it
		}
	}
	if n.max != nil {
		if v, ok := decimalInt(*n.max); ok && v < hi {
			hi = v
		}
	}
	if hi < lo {
		hi = lo
	}
	return strconv.FormatInt(lo+g.r.Int64N(hi-lo+1), 10)
}

// decimalInt is d as an int64, when it is one that fits.
func decimalInt(d decimal) (int64, bool) {
	if int64(len(d.digits)) > d.exp || d.exp > 18 {
		return 0, false
	}
	s := d.digits + strings.Repeat("0", int(d.exp)-len(d.digits))
	if s == "" {
		s = "0"
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if d.neg {
		v = -v
	}
	return v, err == nil
}

// str is a string the schema's format and encoding admit.
func (g *exampler) str(n *rule) string {
	switch {
	case n.ContentEncoding == "base64":
		return base64.StdEncoding.EncodeToString([]byte(exampleWords[g.r.IntN(len(exampleWords))]))
	case n.Format == "date-time":
		return time.Date(2026, time.Month(1+g.r.IntN(12)), 1+g.r.IntN(28), g.r.IntN(24), 0, 0, 0, time.UTC).Format(time.RFC3339)
	case strings.HasPrefix(n.Format, "int"), strings.HasPrefix(n.Format, "uint"):
		return strconv.Itoa(g.r.IntN(100))
	}
	return exampleWords[g.r.IntN(len(exampleWords))]
}

func (g *exampler) array(b *strings.Builder, n *rule, depth int) {
	count := g.r.IntN(4)
	if n.CheckedItems != nil {
		count = *n.CheckedItems
	}
	b.WriteByte('[')
	for i := range count {
		if i > 0 {
			b.WriteByte(',')
		}
		g.value(b, n.Items, depth+1)
	}
	b.WriteByte(']')
}

func (g *exampler) object(b *strings.Builder, n *rule, depth int) {
	b.WriteByte('{')
	first := true
	member := func(key string, v *rule) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(strconv.Quote(key))
		b.WriteByte(':')
		g.value(b, v, depth+1)
	}
	names := mapKeys(n.Properties)
	slices.Sort(names)
	for _, name := range names {
		member(name, n.Properties[name])
	}
	if len(n.Properties) == 0 && n.AdditionalProperties != nil {
		seen := map[string]bool{}
		for range g.r.IntN(4) {
			k := exampleWords[g.r.IntN(len(exampleWords))]
			if pn := n.PropertyNames.resolved(); pn != nil {
				k = g.str(pn)
			}
			if !seen[k] {
				seen[k] = true
				member(k, n.AdditionalProperties)
			}
		}
	}
	b.WriteByte('}')
}

// mapKeys lists the keys of m.
func mapKeys(m map[string]*rule) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
