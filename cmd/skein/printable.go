package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// What a run recorded (its id, status, result, error, outcome keys, names
// and values) was written by workflow code, which may be hostile: printed
// raw, an ESC sequence could rewrite an operator's terminal and a
// right-to-left override could make text read other than it is. The CLI
// prints such text through printable, and JSON through printJSON.

// printable returns s with every character a terminal acts on written as
// an escape: C0 controls (\n, \t, \r, else \xNN), DEL (\x7f), bytes that
// are not UTF-8 (\xNN), C1 controls and the bidirectional marks,
// embeddings, overrides and isolates (\uNNNN). Everything else is kept.
func printable(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if escapeRune(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !escapeRune(r, size):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case size == 1: // C0, DEL, or a byte that is not UTF-8
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// printableLines is printable for a text of several lines, such as an
// error message: its line breaks are kept.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}

// escapeRune reports whether a rune (of size bytes, as decoded) must be
// escaped before it reaches a terminal.
func escapeRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// printJSON prints v as one line of JSON. encoding/json escapes C0
// controls but not DEL, C1 controls or bidirectional overrides, and
// passes bytes that are not UTF-8 through in raw values: those are
// written as \uNNNN escapes (\ufffd for a bad byte), which keeps the
// JSON valid and its strings unchanged.
func printJSON(w io.Writer, v any) error {
	return encodeJSON(w, v, "")
}

// encodeJSON is printJSON with an indent ("" for one line).
func encodeJSON(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := buf.Bytes()
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case escapeRune(r, size) && r >= 0x20: // C0 is escaped by encoding/json, and \n ends the line
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	_, err := w.Write(out)
	return err
}
