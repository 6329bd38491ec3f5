package shape

import (
	"encoding/json"
	"unicode/utf8"
)

// scanner reads a JSON text that is known to be valid (Check validates it
// first), one token at a time, so that a check sees every member of an
// object in order, duplicates included.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// next consumes one byte (a structural character) after white space.
func (s *scanner) next() byte {
	c := s.peek()
	s.i++
	return c
}

// literal consumes true, false or null and returns it.
func (s *scanner) literal() string {
	n := 4
	if s.b[s.i] == 'f' {
		n = 5
	}
	v := string(s.b[s.i : s.i+n])
	s.i += n
	return v
}

// number consumes a number and returns its text.
func (s *scanner) number() string {
	start := s.i
	for s.i < len(s.b) && numberByte(s.b[s.i]) {
		s.i++
	}
	return string(s.b[start:s.i])
}

func numberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// str consumes a string and returns its literal, quotes included.
func (s *scanner) str() []byte {
	start := s.i
	s.i++
	for s.b[s.i] != '"' {
		if s.b[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i++
	return s.b[start:s.i]
}

// skip consumes one value of any kind.
func (s *scanner) skip() {
	depth := 0
	for {
		switch s.peek() {
		case '{', '[':
			s.i++
			depth++
		case '}', ']':
			s.i++
			depth--
		case ',', ':':
			s.i++
			continue
		case '"':
			s.str()
		case 't', 'f', 'n':
			s.literal()
		default:
			s.number()
		}
		if depth == 0 {
			return
		}
	}
}

// unquote returns the text of a string literal as encoding/json decodes
// it (invalid UTF-8 and lone surrogates become U+FFFD).
func unquote(lit []byte) string {
	plain := true
	for _, c := range lit[1 : len(lit)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(lit[1 : len(lit)-1])
	}
	var v string
	_ = json.Unmarshal(lit, &v) // valid: the scanner found a string
	return v
}
