package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// checkJSONFlag checks that the value of a flag (--input, --value) is
// JSON. Its error, a usage error, says where the text breaks (line and
// column, counted from 1) and quotes the text.
func checkJSONFlag(flagName, text string) error {
	var v any
	err := json.Unmarshal([]byte(text), &v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s is not valid JSON: %v: %.100q", flagName, err, text)}
	}
	line, col := lineColumn(text, se.Offset)
	hint := ""
	if strings.TrimSpace(text) != "" && !strings.ContainsAny(strings.TrimSpace(text)[:1], `{["-0123456789tfn`) {
		hint = ` (a string needs its quotes: '"yes"')`
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("%s is not valid JSON at line %d, column %d: %v: %.100q%s", flagName, line, col, se, text, hint)}
}

// lineColumn is the line and column (from 1, in bytes) of the byte that
// ends at offset in text: where a json.SyntaxError found the fault.
func lineColumn(text string, offset int64) (line, col int) {
	off := int(min(max(offset, 1), int64(len(text))))
	if len(text) == 0 {
		return 1, 1
	}
	before := text[:off]
	line = 1 + strings.Count(before, "\n")
	col = off - (strings.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}
