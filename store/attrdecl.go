package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Search attributes: typed values a run carries (skein.SetAttributes, a
// start request's attributes), each of an attribute declared beforehand
// with its type (docs/operations.md, "Search attributes").

// AttrType is the type of a declared search attribute.
type AttrType string

// Attribute types. A value of each is held in Go as: string, int64,
// float64, bool, time.Time.
const (
	AttrString AttrType = "string"
	AttrInt    AttrType = "int"
	AttrFloat  AttrType = "float"
	AttrBool   AttrType = "bool"
	AttrTime   AttrType = "time"
)

// AttrTypes are the attribute types, in the order docs list them.
var AttrTypes = []AttrType{AttrString, AttrInt, AttrFloat, AttrBool, AttrTime}

// Limits of search attributes, the same on every backend
// (docs/limits.md).
const (
	MaxAttrNameLen = 64   // bytes of an attribute's name
	MaxAttrDecls   = 100  // declared attributes
	MaxAttrText    = 1024 // bytes of a string value
)

// ErrAttrLimit is returned (wrapped) by CreateAttr when MaxAttrDecls
// attributes are declared already.
var ErrAttrLimit = errors.New("too many search attributes are declared")

// ErrAttrCond is returned (wrapped, naming the attribute and the rule) by
// Runs for an attribute condition the declarations refuse: an undeclared
// name, or a value or comparison of the wrong type.
var ErrAttrCond = errors.New("invalid attribute condition")

// AttrDecl is the declaration of one search attribute.
type AttrDecl struct {
	Name      string
	Type      AttrType
	CreatedAt time.Time
}

// AttrStore keeps the declarations of search attributes and the values
// runs carry. Attribute names are qualified by their namespace
// (store/namespace.go), in declarations, values and conditions alike; a
// namespace declares up to MaxAttrDecls. A run's values are written with it: Run.Attrs at creation
// and Batch.Attrs after. Every method is safe for concurrent use.
type AttrStore interface {
	// CreateAttr declares d (a zero CreatedAt is now) and returns it as
	// stored. It fails with ErrConflict when d.Name is declared already
	// (whatever its type), with ErrAttrLimit when MaxAttrDecls are, and
	// with an error naming the rule for a name or type CheckAttrDecl
	// refuses.
	CreateAttr(ctx context.Context, d AttrDecl) (AttrDecl, error)
	// Attrs lists the declarations by name.
	Attrs(ctx context.Context) ([]AttrDecl, error)
	// DeleteAttr deletes a declaration and every run's value of it, or
	// fails with ErrNotFound.
	DeleteAttr(ctx context.Context, name string) error
	// RunAttrs returns the attribute values of the runs ids, by run id
	// and name; a run without any (or unknown) is absent.
	RunAttrs(ctx context.Context, ids []string) (map[string]map[string]any, error)
}

// RunAttrs are attribute values written to one run by a Batch: each
// replaces the run's value of that name (the newest wins).
type RunAttrs struct {
	RunID  string
	Values map[string]any
}

// CheckAttrName checks an attribute's name: 1 to MaxAttrNameLen bytes of
// letters, digits and - _ : @ (the characters of a run id), starting
// with a letter, qualified by its namespace (store/namespace.go).
func CheckAttrName(q string) error {
	ns, name := SplitQualified(q)
	if err := CheckNamespaceName(ns); err != nil {
		return fmt.Errorf("attribute %q: %w", q, err)
	}
	switch {
	case name == "":
		return errors.New("attribute name is empty")
	case len(name) > MaxAttrNameLen:
		return fmt.Errorf("attribute name %.20q… is longer than %d bytes", name, MaxAttrNameLen)
	case !('a' <= name[0] && name[0] <= 'z' || 'A' <= name[0] && name[0] <= 'Z'):
		return fmt.Errorf("attribute name %q does not start with a letter", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_:@", c) >= 0) {
			return fmt.Errorf("attribute name %q has %q at byte %d: a name is made of letters, digits and - _ : @", name, name[i:i+1], i)
		}
	}
	return nil
}

// CheckAttrDecl checks a declaration's name and type.
func CheckAttrDecl(d AttrDecl) error {
	if err := CheckAttrName(d.Name); err != nil {
		return err
	}
	for _, t := range AttrTypes {
		if d.Type == t {
			return nil
		}
	}
	return fmt.Errorf("attribute %q: unknown type %q (one of string, int, float, bool, time)", d.Name, d.Type)
}

// AttrTypeOf returns the type of a value as a store keeps it, and false
// for a Go type that is none: string, int64, float64 (finite), bool,
// time.Time.
func AttrTypeOf(v any) (AttrType, bool) {
	switch v := v.(type) {
	case string:
		return AttrString, true
	case int64:
		return AttrInt, true
	case float64:
		return AttrFloat, !math.IsNaN(v) && !math.IsInf(v, 0)
	case bool:
		return AttrBool, true
	case time.Time:
		return AttrTime, true
	}
	return "", false
}

// CheckAttrValues checks values a run is to carry as a store keeps
// them: names within CheckAttrName, values of an attribute type, strings
// valid texts of at most MaxAttrText bytes. It does not look at the
// declarations (the host does).
func CheckAttrValues(runID string, vs map[string]any) error {
	for name, v := range vs {
		if err := CheckAttrName(name); err != nil {
			return fmt.Errorf("run %s: %w", runID, err)
		}
		if _, ok := AttrTypeOf(v); !ok {
			return fmt.Errorf("run %s: attribute %q: a value is a string, int64, float64 (finite), bool or time.Time, not %T", runID, name, v)
		}
		if s, ok := v.(string); ok {
			if len(s) > MaxAttrText {
				return fmt.Errorf("run %s: attribute %q: the value is %d bytes (limit %d)", runID, name, len(s), MaxAttrText)
			}
			if err := CheckText(fmt.Sprintf("run %s: attribute %q", runID, name), s); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckAttrConds checks the conditions of f against the declarations:
// each names a declared attribute and compares it with a value of its
// type. int and float attributes compare numerically with a value of
// either; a bool compares with = and != only. Every backend's Runs calls
// it, so they refuse the same conditions.
func CheckAttrConds(decls []AttrDecl, conds []AttrCond) error {
	if err := (RunFilter{Attrs: conds}).CheckAttrs(); err != nil {
		return fmt.Errorf("%w: %w", ErrAttrCond, err)
	}
	types := make(map[string]AttrType, len(decls))
	for _, d := range decls {
		types[d.Name] = d.Type
	}
	for _, c := range conds {
		t, ok := types[c.Name]
		if !ok {
			return fmt.Errorf("%w: attribute %q is not declared (skein attribute create)", ErrAttrCond, c.Name)
		}
		vt, _ := AttrTypeOf(c.Value)
		numeric := (t == AttrInt || t == AttrFloat) && (vt == AttrInt || vt == AttrFloat)
		switch {
		case vt != t && !numeric:
			return fmt.Errorf("%w: attribute %q is a %s: it cannot be compared with a %s", ErrAttrCond, c.Name, t, vt)
		case t == AttrBool && c.Op != AttrEq && c.Op != AttrNe:
			return fmt.Errorf("%w: attribute %q is a bool: only = and != compare it", ErrAttrCond, c.Name)
		}
	}
	return nil
}

// AttrColumn is how the SQL backends keep a value: the column it goes in
// (v_text, v_int or v_real) and its value there. A bool is 0 or 1 and a
// time its unix ns in v_int.
func AttrColumn(v any) (string, any) {
	switch v := v.(type) {
	case string:
		return "v_text", v
	case int64:
		return "v_int", v
	case float64:
		return "v_real", v
	case bool:
		if v {
			return "v_int", int64(1)
		}
		return "v_int", int64(0)
	case time.Time:
		return "v_int", v.UnixNano()
	}
	return "", nil
}

// AttrFromColumns is the value of type t read back from its columns.
func AttrFromColumns(t AttrType, text string, i int64, f float64) any {
	switch t {
	case AttrString:
		return text
	case AttrInt:
		return i
	case AttrFloat:
		return f
	case AttrBool:
		return i != 0
	case AttrTime:
		return time.Unix(0, i)
	}
	return nil
}
