package shapegen

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Values returns n random JSON values for schema (a JSON Schema of the
// subset package shape checks): most follow it, with the values at its
// edges (integer and float bounds, base64, dates, ",string" contents,
// keys that differ in case or repeat, Go array lengths), and some stray
// from it (wrong types, nulls, garbage), so that both verdicts occur.
func Values(r *rand.Rand, schema []byte, n int) [][]byte {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		panic("shapegen: the schema is not JSON: " + err.Error())
	}
	g := gen{r: r, root: root}
	out := make([][]byte, n)
	for i := range out {
		var b strings.Builder
		g.value(&b, root, 0)
		out[i] = []byte(b.String())
	}
	return out
}

type gen struct {
	r    *rand.Rand
	root any
}

const maxDepth = 5

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) chance(n int) bool { return g.r.IntN(n) == 0 }

// resolve follows "$ref" ("#" or "#/$defs/NAME").
func (g *gen) resolve(s any) any {
	for range 10 {
		m, ok := s.(map[string]any)
		if !ok {
			return s
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return s
		}
		if ref == "#" {
			s = g.root
			continue
		}
		defs, _ := g.root.(map[string]any)["$defs"].(map[string]any)
		s = defs[strings.TrimPrefix(ref, "#/$defs/")]
	}
	return s
}

// value writes a value for schema s.
func (g *gen) value(b *strings.Builder, s any, depth int) {
	s = g.resolve(s)
	m, _ := s.(map[string]any)
	if m == nil || depth > maxDepth || g.chance(16) {
		g.anything(b, depth)
		return
	}
	ty := "" // no "type": any
	switch t := m["type"].(type) {
	case string:
		ty = t
	case []any: // null is in most lists: pick it less often than the others
		ty, _ = t[g.r.IntN(len(t))].(string)
		if ty == "null" && len(t) > 1 && g.r.IntN(3) > 0 {
			ty, _ = t[0].(string)
		}
	}
	switch ty {
	case "null":
		b.WriteString("null")
	case "boolean":
		b.WriteString(g.pick("true", "false"))
	case "integer", "number":
		b.WriteString(g.number(m, ty))
	case "string":
		g.str(b, m, depth)
	case "array":
		g.array(b, m, depth)
	case "object":
		g.object(b, m, depth)
	default:
		g.anything(b, depth)
	}
}

// anything writes a value of any type, numbers past float64 included.
func (g *gen) anything(b *strings.Builder, depth int) {
	switch k := g.r.IntN(8); {
	case k == 0:
		b.WriteString("null")
	case k == 1:
		b.WriteString(g.pick("true", "false"))
	case k <= 3:
		b.WriteString(g.pick(floats...))
	case k == 4 || depth > maxDepth:
		writeString(b, g.text())
	case k == 5:
		b.WriteString("[")
		for i := range g.r.IntN(3) {
			if i > 0 {
				b.WriteString(",")
			}
			g.anything(b, depth+1)
		}
		b.WriteString("]")
	default:
		b.WriteString("{")
		for i := range g.r.IntN(3) {
			if i > 0 {
				b.WriteString(",")
			}
			writeString(b, g.pick("a", "n", "by", "x"))
			b.WriteString(":")
			g.anything(b, depth+1)
		}
		b.WriteString("}")
	}
}

// floats are numbers at the edges of float32 and float64: each side of
// the point where rounding gives infinity, subnormals, underflow.
var floats = []string{
	"0", "-0", "1", "-1", "1.5", "-2.25e10", "1E2", "1e+3", "0.1",
	"3.4028234663852886e38", "3.4028235677973366e38", "3.4028235677973367e38", "-3.4028236e38", "1e39",
	"1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "-1e309", "1e400",
	"1e-400", "5e-324", "2e-45", "1e-46", "123456789012345678901234567890",
}

// number writes an integer or a number for m, near its format's bounds.
func (g *gen) number(m map[string]any, ty string) string {
	f, _ := m["format"].(string)
	if ty == "number" && !strings.Contains(f, "int") && g.r.IntN(3) > 0 {
		return g.pick(floats...)
	}
	lo, hi := bound(m["minimum"], "-9223372036854775808"), bound(m["maximum"], "18446744073709551615")
	switch g.r.IntN(7) {
	case 0:
		return g.pick("0", "-0", "1", "-1", "7")
	case 1:
		return lo.String()
	case 2:
		return hi.String()
	case 3:
		return new(big.Int).Sub(lo, big.NewInt(1)).String()
	case 4:
		return new(big.Int).Add(hi, big.NewInt(1)).String()
	case 5:
		return g.pick("1.0", "1e3", "1E2", "-1.5", "100000000000000000000", "9223372036854775808", "-9223372036854775809", "1e400")
	}
	span := new(big.Int).Sub(hi, lo)
	span.Add(span, big.NewInt(1))
	off := new(big.Int).Mod(new(big.Int).SetUint64(g.r.Uint64()), span)
	return new(big.Int).Add(lo, off).String()
}

func bound(v any, def string) *big.Int {
	n, ok := new(big.Int).SetString(def, 10)
	if s, isNum := v.(json.Number); isNum {
		if x, good := new(big.Int).SetString(string(s), 10); good {
			n, ok = x, true
		}
	}
	if !ok {
		panic("shapegen: bad bound")
	}
	return n
}

// str writes a string for m: base64, a date-time, a number, a ",string"
// field's literal, or text.
func (g *gen) str(b *strings.Builder, m map[string]any, depth int) {
	f, _ := m["format"].(string)
	switch {
	case m["x-quoted"] != nil:
		writeString(b, g.quoted(m["x-quoted"], depth))
	case m["contentEncoding"] == "base64":
		raw := make([]byte, g.r.IntN(6))
		for i := range raw {
			raw[i] = byte(g.r.IntN(256))
		}
		good := base64.StdEncoding.EncodeToString(raw)
		writeString(b, g.pick(good, good, good+"\n", good[:len(good)/2]+"\r\n"+good[len(good)/2:], "!!", "aGk", "aGk==", " aGk=", "====", "aGk=aGk="))
	case f == "date-time":
		if g.chance(6) {
			b.WriteString(`"\u0032024-01-02T03:04:05Z"`) // an escape: time.Time sees the raw text
			return
		}
		writeString(b, g.pick("2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123456789+02:00", "2024-13-01T00:00:00Z",
			"2024-01-02 03:04:05Z", "yesterday", "2024-01-02T24:00:00Z", "2024-01-02T03:04:05z", ""))
	case f == "json-number":
		writeString(b, g.pick("1", "-1.5e3", "0", "01", "1.", "abc", "", " 1", "NaN", "1e400"))
	case strings.Contains(f, "int"):
		writeString(b, g.number(m, "integer"))
	case g.chance(8):
		b.WriteString(g.pick(`"\ud800"`, `"\ud800\u0041"`, `"\ud83d\ude00"`, `"\u00e9\/"`)) // escapes: lone surrogates become U+FFFD
	default:
		writeString(b, g.text())
	}
}

// quoted returns the contents of a ",string" field's string: a literal
// of the inner schema, or text near one.
func (g *gen) quoted(inner any, depth int) string {
	if g.r.IntN(3) == 0 {
		return g.pick("", " 5", "5 ", "nul", "null", "true", "false", "+1", "007", "0x10", "0x1p3", "-Inf", "Infinity",
			"1e3", "1_000", `"x"`, `"\"x"`, `"1.5"`, `"abc`, "[1]", "{}", "-", "12abc", "-0")
	}
	var b strings.Builder
	g.value(&b, inner, depth+1)
	return b.String()
}

func (g *gen) array(b *strings.Builder, m map[string]any, depth int) {
	n := g.r.IntN(4)
	checked := -1
	if c, ok := m["x-checkedItems"].(json.Number); ok {
		checked, _ = strconv.Atoi(string(c))
		n = max(0, checked-1+g.r.IntN(4))
	}
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		if checked >= 0 && i >= checked {
			g.anything(b, depth+1) // past a Go array's length: skipped
			continue
		}
		g.value(b, m["items"], depth+1)
	}
	b.WriteString("]")
}

func (g *gen) object(b *strings.Builder, m map[string]any, depth int) {
	props, _ := m["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	type member struct {
		key string
		s   any
	}
	var ms []member
	for _, name := range names {
		if g.r.IntN(max(2, len(names)/2)) == 0 { // two members on average: a value with one fault tells most

			ms = append(ms, member{g.variant(name), props[name]})
			if g.chance(4) { // the key again: each occurrence is decoded
				ms = append(ms, member{g.variant(name), props[name]})
			}
		}
	}
	if addl, ok := m["additionalProperties"]; ok || g.chance(3) {
		pn, _ := m["propertyNames"].(map[string]any)
		for range g.r.IntN(3) {
			ms = append(ms, member{g.key(pn), addl})
		}
	}
	g.r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	b.WriteString("{")
	for i, x := range ms {
		if i > 0 {
			b.WriteString(",")
		}
		if g.chance(8) {
			b.WriteString(escapeAll(x.key))
		} else {
			writeString(b, x.key)
		}
		b.WriteString(":")
		g.value(b, x.s, depth+1)
	}
	b.WriteString("}")
}

// variant returns name, or a spelling of it that differs in case
// (encoding/json matches it too), Unicode folds included.
func (g *gen) variant(name string) string {
	if g.r.IntN(3) > 0 {
		return name
	}
	var b strings.Builder
	for _, c := range name {
		switch {
		case (c == 'k' || c == 'K') && g.chance(3):
			b.WriteRune('\u212a') // Kelvin sign: folds to K
		case (c == 's' || c == 'S') && g.chance(3):
			b.WriteRune('\u017f') // long s: folds to S
		case c >= 'a' && c <= 'z' && g.chance(2):
			b.WriteRune(c - 'a' + 'A')
		case c >= 'A' && c <= 'Z' && g.chance(2):
			b.WriteRune(c - 'A' + 'a')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// key returns a map key: for an integer or date-time key, text near one.
func (g *gen) key(pn map[string]any) string {
	f, _ := pn["format"].(string)
	switch {
	case strings.Contains(f, "int") && g.r.IntN(3) > 0:
		if g.chance(2) {
			return g.number(pn, "integer")
		}
		return g.pick("1", "-0", "+5", "007", "300", "abc", "1e3", " 1", "", "-1", "65536")
	case f == "date-time":
		return g.pick("2024-01-02T03:04:05Z", "2024-01-02", "x")
	}
	return g.pick("a", "k", "by", "é", "", "n", "1")
}

// text returns a random string: plain, Unicode, escapes, invalid UTF-8.
func (g *gen) text() string {
	return g.pick("", "a", "yes", "ana", "é", "\u212a", "line\nbreak", "tab\t", "\x00", "\xff\xfe",
		"a\"b", "<&>", strings.Repeat("long ", 12), "1", "true", "null")
}

// writeString writes s as a JSON string (invalid UTF-8 kept as bytes).
func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&15])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// escapeAll writes s as a JSON string with every rune escaped (\uXXXX,
// surrogate pairs beyond the BMP), so that a check must unescape keys.
func escapeAll(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		if c > 0xFFFF {
			c -= 0x10000
			b.WriteString(`\u` + strconv.FormatInt(int64(0xD800+(c>>10)), 16) + `\u` + strconv.FormatInt(int64(0xDC00+(c&0x3FF)), 16))
			continue
		}
		h := strconv.FormatInt(int64(c), 16)
		b.WriteString(`\u` + strings.Repeat("0", 4-len(h)) + h)
	}
	b.WriteByte('"')
	return b.String()
}
