package shape

import (
	"unicode"
	"unicode/utf8"
)

// foldName returns the case-folded form of a property name: two names
// fold alike exactly when encoding/json's decoder matches one to the
// other ignoring case (its foldName, fold.go): ASCII letters upper-cased,
// every other rune the smallest of its Unicode fold orbit.
func foldName(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return out
}

// foldRune returns the smallest rune of r's fold orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
