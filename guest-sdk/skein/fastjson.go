package skein

import (
	"math"
	"strconv"
)

// Fast paths for the JSON of the values workflows pass most: integers,
// booleans, plain ASCII strings and struct{}. Under the interrupt checks of
// the skein host, encoding/json's reflection costs about 12 µs to encode
// and decode one int, half of a step. The fast paths produce exactly the
// bytes json.Marshal produces and accept only input that json.Unmarshal
// decodes to the same value; everything else goes through encoding/json.

// encodeFast returns json.Marshal(v) for the types it knows.
func encodeFast(v any) ([]byte, bool) {
	switch x := v.(type) {
	case int:
		return strconv.AppendInt(nil, int64(x), 10), true
	case int64:
		return strconv.AppendInt(nil, x, 10), true
	case int32:
		return strconv.AppendInt(nil, int64(x), 10), true
	case uint:
		return strconv.AppendUint(nil, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(nil, x, 10), true
	case uint32:
		return strconv.AppendUint(nil, uint64(x), 10), true
	case bool:
		if x {
			return []byte("true"), true
		}
		return []byte("false"), true
	case string:
		if !plainASCII(x) {
			return nil, false
		}
		b := make([]byte, 0, len(x)+2)
		b = append(b, '"')
		b = append(b, x...)
		return append(b, '"'), true
	case struct{}:
		return []byte("{}"), true
	case nil:
		return []byte("null"), true
	}
	return nil, false
}

// plainASCII reports whether json.Marshal writes s as is between quotes:
// printable ASCII without '"', '\\' and the HTML characters it escapes.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// decodeFast decodes data into *p for the types it knows and returns
// false, leaving *p alone, when encoding/json must do it.
func decodeFast(p any, data []byte) bool {
	switch x := p.(type) {
	case *int:
		n, ok := jsonInt(data, math.MinInt, math.MaxInt)
		if ok {
			*x = int(n)
		}
		return ok
	case *int64:
		n, ok := jsonInt(data, math.MinInt64, math.MaxInt64)
		if ok {
			*x = n
		}
		return ok
	case *int32:
		n, ok := jsonInt(data, math.MinInt32, math.MaxInt32)
		if ok {
			*x = int32(n)
		}
		return ok
	case *bool:
		switch string(data) {
		case "true":
			*x = true
			return true
		case "false":
			*x = false
			return true
		}
	case *string:
		if len(data) >= 2 && data[0] == '"' && data[len(data)-1] == '"' {
			inner := data[1 : len(data)-1]
			for _, c := range inner {
				if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
					return false
				}
			}
			*x = string(inner)
			return true
		}
	case *struct{}:
		return string(data) == "{}"
	}
	return false
}

// jsonInt parses a JSON integer (-?(0|[1-9][0-9]*)) within [lo, hi].
func jsonInt(b []byte, lo, hi int64) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > uint64(-(lo+1))+1 {
			return 0, false
		}
		return -int64(u-1) - 1, true
	}
	if u > uint64(hi) {
		return 0, false
	}
	return int64(u), true
}
