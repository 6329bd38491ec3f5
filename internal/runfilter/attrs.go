package runfilter

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/skeinrun/skein/store"
)

var (
	intRe   = regexp.MustCompile(`^-?[0-9]+$`)
	floatRe = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+([eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)$`)
	nameRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// attrTerm reads attr.NAME OP VALUE into f.Attrs. The value's type is
// how it is written: "quoted" or a bare word is a string, 42 an int64,
// 4.2 a float64, true or false a bool, an RFC 3339 or relative time a
// time.Time.
func (p *parser) attrTerm(f *store.RunFilter, ft token) error {
	name := ft.text[len("attr."):]
	if !nameRe.MatchString(name) {
		return p.fail(ft, "an attribute name is a letter or _ followed by letters, digits and _ (attr.customer)")
	}
	op := p.next()
	if op.kind != tokOp {
		return p.fail(op, "attr."+name+" compares with = != < <= > >= or ~")
	}
	v := p.next()
	if v.kind != tokWord && v.kind != tokString {
		return p.fail(v, fmt.Sprintf("attr.%s %s wants a value", name, op.text))
	}
	val, err := p.attrValue(v)
	if err != nil {
		return err
	}
	if _, ok := val.(string); op.text == "~" && !ok {
		return p.fail(v, "~ (contains) compares strings only: quote the value")
	}
	f.Attrs = append(f.Attrs, store.AttrCond{Name: name, Op: store.AttrOp(op.text), Value: val})
	return nil
}

// attrValue is the typed value of an attribute condition.
func (p *parser) attrValue(v token) (any, error) {
	if v.kind == tokString {
		if !store.ValidText(v.text) {
			return nil, p.fail(v, "a value is UTF-8 text without NUL bytes")
		}
		return v.text, nil
	}
	switch s := v.text; {
	case s == "true" || s == "false":
		return s == "true", nil
	case intRe.MatchString(s):
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, p.fail(v, "an integer is a 64-bit signed number")
		}
		return n, nil
	case floatRe.MatchString(s):
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(x, 0) {
			return nil, p.fail(v, "a number is out of the range of a 64-bit float")
		}
		return x, nil
	}
	if t, ok := p.timeValue(v); ok {
		if !inRange(t) {
			return nil, p.fail(v, "a time is after 1970 and before 2262")
		}
		return t, nil
	}
	if !store.ValidText(v.text) {
		return nil, p.fail(v, "a value is UTF-8 text without NUL bytes")
	}
	return v.text, nil
}

// formatAttrValue writes an attribute condition's value so that Parse
// reads the same value of the same type.
func formatAttrValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !floatRe.MatchString(s) {
			s = strconv.FormatFloat(x, 'f', 1, 64) // 42 -> 42.0
		}
		return s
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%q", fmt.Sprint(v))
}
