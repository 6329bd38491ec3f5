package store

import (
	"errors"
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
// reaches more runs than asked.
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
