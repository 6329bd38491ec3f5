// Package runfilter is the filter language of runs, shared by the API
// (GET /v1/runs?where=, POST /v1/batches), the CLI (--where) and the UI's
// run list: terms joined by "and", each a field, a comparison and a
// value, parsed into a store.RunFilter. docs/operations.md, "Bulk
// actions", gives the grammar; Parse and Format are its two directions.
package runfilter

import (
	"fmt"
	"strconv"
	"strings"
)

// tokKind is the kind of a token.
type tokKind int

const (
	tokEOF    tokKind = iota
	tokWord           // a bare word: a name, a number, a time, a relative time
	tokString         // a double-quoted string, unquoted
	tokOp             // = != < <= > >= ~
	tokLParen
	tokRParen
	tokComma
)

// token is one token of a filter, at byte offset pos.
type token struct {
	kind tokKind
	text string // a word's text, a string's value, an operator
	pos  int
}

// wordChar reports whether c may be part of a bare word: letters,
// digits and the punctuation of ids, names, times and numbers.
func wordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("_-:@.+/", c) >= 0 || c >= 0x80
}

// lex splits s into tokens.
func lex(s string) ([]token, error) {
	var ts []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',':
			ts = append(ts, token{kind: map[byte]tokKind{'(': tokLParen, ')': tokRParen, ',': tokComma}[c], text: string(c), pos: i})
			i++
		case c == '=' || c == '~':
			ts = append(ts, token{kind: tokOp, text: string(c), pos: i})
			i++
		case c == '!' || c == '<' || c == '>':
			op := string(c)
			if i+1 < len(s) && s[i+1] == '=' {
				op += "="
			}
			if op == "!" {
				return nil, &Error{Pos: i, Term: "!", Rule: "! must be followed by = (!= means not equal)"}
			}
			ts = append(ts, token{kind: tokOp, text: op, pos: i})
			i += len(op)
		case c == '"':
			v, n, err := quoted(s[i:])
			if err != nil {
				return nil, &Error{Pos: i, Term: clip(s[i:]), Rule: err.Error()}
			}
			ts = append(ts, token{kind: tokString, text: v, pos: i})
			i += n
		case wordChar(c):
			j := i
			for j < len(s) && wordChar(s[j]) {
				j++
			}
			ts = append(ts, token{kind: tokWord, text: s[i:j], pos: i})
			i = j
		default:
			return nil, &Error{Pos: i, Term: s[i : i+1], Rule: fmt.Sprintf("unexpected character %q: a term is FIELD OP VALUE (quote a value with other characters in \"...\")", c)}
		}
	}
	return append(ts, token{kind: tokEOF, pos: len(s)}), nil
}

// quoted reads the double-quoted string at the start of s (Go's escapes:
// \" \\ \n \t \xNN \uNNNN ...) and returns its value and its length.
func quoted(s string) (string, int, error) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			v, err := strconv.Unquote(s[:i+1])
			if err != nil {
				return "", 0, fmt.Errorf("bad escape in a quoted string (the escapes are Go's: \\\" \\\\ \\n \\t \\xNN \\uNNNN)")
			}
			return v, i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("the quoted string has no closing \"")
}

// clip is the start of s, for an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
