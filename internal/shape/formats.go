package shape

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// numberRules returns why a number's text breaks r ("" if it does not).
// quoted is set for the contents of a ",string" field, which Go parses
// with strconv whatever they look like, when they start like a number.
func numberRules(r *rule, text string, quoted bool) string {
	got := "integer"
	if strings.ContainsAny(text, ".eE") {
		got = "number"
	}
	if !r.allows(got) {
		return r.want(got + " " + text)
	}
	if bits, unsigned, ok := intFormat(r.Format); ok {
		if !parsesInt(text, bits, unsigned) {
			return "want " + intRange(r.Format) + ", got " + got + " " + text
		}
	} else if bits, ok := floatFormat(r.Format); ok {
		if _, err := strconv.ParseFloat(text, bits); err != nil {
			return "want " + floatRange(bits) + ", got " + got + " " + text
		}
	} else if quoted && r.Format != "json-number" && !validNumber(text) {
		return "want a JSON number, got " + strconv.Quote(text)
	}
	if r.min == nil && r.max == nil {
		return ""
	}
	d, ok := parseDecimal(text)
	switch {
	case !ok:
		return "want a decimal number, got " + strconv.Quote(text)
	case r.min != nil && d.cmp(*r.min) < 0, r.max != nil && d.cmp(*r.max) > 0:
		return "want " + boundsText(r) + ", got " + got + " " + text
	}
	return ""
}

func boundsText(r *rule) string {
	switch {
	case r.min != nil && r.max != nil:
		return "a number in [" + string(*r.Minimum) + ", " + string(*r.Maximum) + "]"
	case r.min != nil:
		return "a number >= " + string(*r.Minimum)
	}
	return "a number <= " + string(*r.Maximum)
}

// stringRules returns why a string literal breaks r's string keywords ("" if
// it does not).
func stringRules(r *rule, lit []byte) string {
	if r.ContentEncoding == "" && r.Format == "" {
		return ""
	}
	s := unquote(lit)
	if r.ContentEncoding == "base64" {
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return "want base64 (contentEncoding base64: the standard alphabet, padded), got " + describeString(s)
		}
	}
	switch r.Format {
	case "date-time":
		var t time.Time
		if t.UnmarshalJSON(lit) != nil { // raw, as time.Time gets it: an escape fails
			return "want an RFC 3339 date-time (as Go's time.Time decodes it), got " + describeString(s)
		}
	case "json-number":
		if !validNumber(s) {
			return "want a number or a string holding a JSON number, got " + describeString(s)
		}
	default:
		if bits, unsigned, ok := intFormat(r.Format); ok && !parsesInt(s, bits, unsigned) {
			return "want " + intRange(r.Format) + ", got " + describeString(s)
		}
	}
	return ""
}

// quotedRules returns why the contents of a ",string" field's string break
// the schema of its literal ("" if they do not), as encoding/json reads
// them: null, true, false, a JSON string, or text starting with '-' or a
// digit that strconv parses.
func quotedRules(r *rule, s string) string {
	const prefix = "in the string (the field is tagged ,string): "
	if s == "" {
		return prefix + `want a literal, got ""`
	}
	r = r.resolved()
	if r == nil {
		return ""
	}
	var reason string
	switch c := s[0]; {
	case s == "null":
		if !r.allows("null") {
			reason = r.want("null")
		}
	case s == "true", s == "false":
		if !r.allows("boolean") {
			reason = r.want("boolean " + s)
		}
	case c == '"' && s[len(s)-1] == '"' && len(s) >= 2 && json.Valid([]byte(s)):
		if !r.allows("string") {
			reason = r.want(describeString(unquote([]byte(s))))
		} else {
			reason = stringRules(r, []byte(s))
		}
	case c == '-', c >= '0' && c <= '9':
		reason = numberRules(r, s, true)
	default:
		reason = "want a literal (null, true, false, a number or a JSON string), got " + strconv.Quote(s)
	}
	if reason != "" {
		return prefix + reason
	}
	return ""
}

// intFormat parses "int8" … "int64", "uint8" … "uint64".
func intFormat(f string) (bits int, unsigned, ok bool) {
	rest, unsigned := strings.CutPrefix(f, "u")
	rest, ok = strings.CutPrefix(rest, "int")
	if !ok {
		return 0, false, false
	}
	switch rest {
	case "8", "16", "32", "64":
		bits, _ = strconv.Atoi(rest)
		return bits, unsigned, true
	}
	return 0, false, false
}

// floatFormat parses "float32" and "float64".
func floatFormat(f string) (bits int, ok bool) {
	switch f {
	case "float32":
		return 32, true
	case "float64":
		return 64, true
	}
	return 0, false
}

// parsesInt reports whether encoding/json decodes text into a Go integer
// of that width: strconv.ParseInt or ParseUint, base 10.
func parsesInt(text string, bits int, unsigned bool) bool {
	var err error
	if unsigned {
		_, err = strconv.ParseUint(text, 10, bits)
	} else {
		_, err = strconv.ParseInt(text, 10, bits)
	}
	return err == nil
}

// intRange names an integer format's range, e.g. "integer in int8 range
// [-128, 127]".
func intRange(f string) string {
	bits, unsigned, _ := intFormat(f)
	if unsigned {
		return "integer in " + f + " range [0, " + strconv.FormatUint(1<<bits-1, 10) + "]"
	}
	return "integer in " + f + " range [" + strconv.FormatInt(-1<<(bits-1), 10) + ", " + strconv.FormatInt(1<<(bits-1)-1, 10) + "]"
}

// floatRange names a float format's range.
func floatRange(bits int) string {
	m := strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64)
	if bits == 32 {
		m = strconv.FormatFloat(math.MaxFloat32, 'g', -1, 32)
	}
	return "number in float" + strconv.Itoa(bits) + " range [-" + m + ", " + m + "]"
}
