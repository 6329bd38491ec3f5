package sqlite

import (
	"database/sql"
	"fmt"
	"reflect"
	"strconv"
)

// assign stores the column value src (as the driver returns it: nil,
// int64, float64, string or a []byte of its own) in dest, as
// database/sql's Scan would for the destinations the writer reads into:
// *string, *[]byte, *int64, *int, *bool, *float64, *any, a sql.Scanner,
// or a pointer to a type whose kind is one of those.
func assign(dest, src any) error {
	switch d := dest.(type) {
	case *string:
		switch s := src.(type) {
		case string:
			*d = s
			return nil
		case []byte:
			*d = string(s)
			return nil
		case int64:
			*d = strconv.FormatInt(s, 10)
			return nil
		}
	case *[]byte:
		switch s := src.(type) {
		case nil:
			*d = nil
			return nil
		case []byte:
			*d = s // the driver's copy
			return nil
		case string:
			*d = []byte(s)
			return nil
		}
	case *int64:
		if s, ok := src.(int64); ok {
			*d = s
			return nil
		}
	case *int:
		if s, ok := src.(int64); ok {
			*d = int(s)
			return nil
		}
	case *bool:
		if s, ok := src.(int64); ok {
			*d = s != 0
			return nil
		}
	case *float64:
		switch s := src.(type) {
		case float64:
			*d = s
			return nil
		case int64:
			*d = float64(s)
			return nil
		}
	case *any:
		*d = src
		return nil
	case sql.Scanner:
		return d.Scan(src)
	}
	return assignKind(dest, src)
}

// assignKind is assign for a pointer to a named type (store.RunStatus,
// an integer of another size).
func assignKind(dest, src any) error {
	p := reflect.ValueOf(dest)
	if p.Kind() != reflect.Pointer || p.IsNil() {
		return fmt.Errorf("destination not a pointer: %T", dest)
	}
	v := p.Elem()
	switch s := src.(type) {
	case int64:
		switch v.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if v.OverflowInt(s) {
				return fmt.Errorf("converting %d to %s: value out of range", s, v.Type())
			}
			v.SetInt(s)
			return nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if s < 0 || v.OverflowUint(uint64(s)) {
				return fmt.Errorf("converting %d to %s: value out of range", s, v.Type())
			}
			v.SetUint(uint64(s))
			return nil
		}
	case string:
		if v.Kind() == reflect.String {
			v.SetString(s)
			return nil
		}
	case []byte:
		if v.Kind() == reflect.String {
			v.SetString(string(s))
			return nil
		}
	}
	if src == nil {
		return fmt.Errorf("converting NULL to %s is unsupported", v.Type())
	}
	return fmt.Errorf("unsupported Scan, storing driver.Value type %T into type %T", src, dest)
}
