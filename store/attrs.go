package store

import (
	"cmp"
	"errors"
	"strings"
	"time"
)

// AttrCond is one condition on a run's search attributes in a RunFilter:
// the attribute Name compared by Op with Value. Value is a string, an
// int64, a float64, a bool or a time.Time; a run without the attribute
// does not match (whatever the Op).
type AttrCond struct {
	Name  string
	Op    AttrOp
	Value any
}

// AttrOp is a comparison of an AttrCond.
type AttrOp string

// Attribute comparisons. AttrContains is for strings only: the value
// holds the text.
const (
	AttrEq       AttrOp = "="
	AttrNe       AttrOp = "!="
	AttrLt       AttrOp = "<"
	AttrLe       AttrOp = "<="
	AttrGt       AttrOp = ">"
	AttrGe       AttrOp = ">="
	AttrContains AttrOp = "~"
)

// ErrAttrsUnsupported is returned by Runs for a filter with attribute
// conditions on a store that does not record search attributes: a
// filter is never ignored, so an action on the runs it selects never
// reaches more runs than asked. The stores of this repository record
// them; it stays for other implementations of Store.
var ErrAttrsUnsupported = errors.New("search attributes are not recorded by this store")

// attrValueOK reports whether v has a type an AttrCond's Value may have.
func attrValueOK(v any) bool {
	switch v.(type) {
	case string, int64, float64, bool, time.Time:
		return true
	}
	return false
}

// CheckAttrs reports whether f's attribute conditions are well formed: a
// name, a known Op and a Value of an allowed type (AttrContains on a
// string only).
func (f RunFilter) CheckAttrs() error {
	for _, c := range f.Attrs {
		switch {
		case c.Name == "":
			return errors.New("attribute condition without a name")
		case !attrValueOK(c.Value):
			return errors.New("attribute " + c.Name + ": value must be a string, int64, float64, bool or time.Time")
		}
		switch c.Op {
		case AttrEq, AttrNe, AttrLt, AttrLe, AttrGt, AttrGe:
		case AttrContains:
			if _, ok := c.Value.(string); !ok {
				return errors.New("attribute " + c.Name + ": ~ (contains) compares strings only")
			}
		default:
			return errors.New("attribute " + c.Name + ": unknown comparison " + string(c.Op))
		}
	}
	return nil
}

// AttrMatch reports whether a run's value v of an attribute meets c, as
// every backend compares: strings bytewise, numbers numerically (an int
// with a float as float64), times by instant, bools by = and != only. A
// value of a type c cannot compare with does not match. The memory store
// uses it; the SQL backends compare the same way in SQL.
func AttrMatch(v any, c AttrCond) bool {
	if c.Op == AttrContains {
		s, ok := v.(string)
		t, _ := c.Value.(string)
		return ok && strings.Contains(s, t)
	}
	var d int
	switch v := v.(type) {
	case string:
		t, ok := c.Value.(string)
		if !ok {
			return false
		}
		d = strings.Compare(v, t)
	case bool:
		t, ok := c.Value.(bool)
		if !ok || (c.Op != AttrEq && c.Op != AttrNe) {
			return false
		}
		if v != t {
			d = 1
		}
	case time.Time:
		t, ok := c.Value.(time.Time)
		if !ok {
			return false
		}
		d = cmp.Compare(v.UnixNano(), t.UnixNano())
	case int64, float64:
		var ok bool
		if d, ok = compareNumbers(v, c.Value); !ok {
			return false
		}
	default:
		return false
	}
	return opHolds(c.Op, d)
}

// compareNumbers compares two numbers (int64 or float64): as int64 when
// both are, as float64 otherwise.
func compareNumbers(a, b any) (int, bool) {
	ai, aInt := a.(int64)
	bi, bInt := b.(int64)
	if aInt && bInt {
		return cmp.Compare(ai, bi), true
	}
	af, ok1 := asFloat(a)
	bf, ok2 := asFloat(b)
	return cmp.Compare(af, bf), ok1 && ok2
}

func asFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// opHolds reports whether op holds of a comparison's result d.
func opHolds(op AttrOp, d int) bool {
	switch op {
	case AttrEq:
		return d == 0
	case AttrNe:
		return d != 0
	case AttrLt:
		return d < 0
	case AttrLe:
		return d <= 0
	case AttrGt:
		return d > 0
	case AttrGe:
		return d >= 0
	}
	return false
}
