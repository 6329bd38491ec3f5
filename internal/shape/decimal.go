package shape

import "strings"

// decimal is a number in exact decimal form, for "minimum" and
// "maximum": 0.digits × 10^exp, digits without leading or trailing zeros
// ("" is zero). Comparing decimals is exact where float64 is not (int64
// and uint64 bounds, long values).
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// maxExp bounds an exponent: any larger one orders the same, since no
// value has that many digits.
const maxExp = 1 << 50

// parseDecimal reads -?digits(.digits)?([eE][+-]?digits)?, leading
// zeros allowed (the contents of a ",string" field may have them).
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	d.neg = strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, rest := span(s)
	if intPart == "" {
		return d, false
	}
	frac := ""
	if strings.HasPrefix(rest, ".") {
		frac, rest = span(rest[1:])
		if frac == "" {
			return d, false
		}
	}
	var e int64
	if rest != "" {
		if rest[0] != 'e' && rest[0] != 'E' {
			return d, false
		}
		rest = rest[1:]
		eneg := strings.HasPrefix(rest, "-")
		rest = strings.TrimPrefix(strings.TrimPrefix(rest, "-"), "+")
		digits, tail := span(rest)
		if digits == "" || tail != "" {
			return d, false
		}
		for _, c := range digits {
			e = min(e*10+int64(c-'0'), maxExp)
		}
		if eneg {
			e = -e
		}
	}
	all := intPart + frac
	e += int64(len(intPart))
	trimmed := strings.TrimLeft(all, "0")
	e -= int64(len(all) - len(trimmed))
	d.digits = strings.TrimRight(trimmed, "0")
	d.exp = e
	if d.digits == "" {
		d.neg, d.exp = false, 0
	}
	return d, true
}

// span splits s after its leading digits.
func span(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}

// cmp compares a and b: -1, 0 or +1.
func (a decimal) cmp(b decimal) int {
	switch {
	case a.neg && !b.neg:
		if a.digits == "" && b.digits == "" {
			return 0
		}
		return -1
	case !a.neg && b.neg:
		if a.digits == "" && b.digits == "" {
			return 0
		}
		return +1
	}
	c := a.abscmp(b)
	if a.neg {
		return -c
	}
	return c
}

func (a decimal) abscmp(b decimal) int {
	switch {
	case a.digits == "" || b.digits == "":
		return cmpInt(len(a.digits), len(b.digits)) // zero is the smallest
	case a.exp < b.exp:
		return -1
	case a.exp > b.exp:
		return +1
	}
	return strings.Compare(a.digits, b.digits) // no trailing zeros: a prefix is smaller
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return +1
	}
	return 0
}

// validNumber reports whether s is a JSON number (encoding/json's
// isValidNumber).
func validNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	intPart, rest := span(s)
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return false
	}
	if strings.HasPrefix(rest, ".") {
		var frac string
		if frac, rest = span(rest[1:]); frac == "" {
			return false
		}
	}
	if rest != "" && (rest[0] == 'e' || rest[0] == 'E') {
		rest = rest[1:]
		if rest != "" && (rest[0] == '+' || rest[0] == '-') {
			rest = rest[1:]
		}
		var digits string
		if digits, rest = span(rest); digits == "" {
			return false
		}
	}
	return rest == ""
}
