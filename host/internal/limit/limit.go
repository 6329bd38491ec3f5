// Package limit is the error of a run, a module or a request that went
// over one of the host's resource limits, and the hints that say where
// each limit is set (host.Config.LimitHint: the CLI's flags).
package limit

import "fmt"

// Error reports what went over a limit: the run fails with it, a deploy
// or a request is refused. host.LimitError is this type.
type Error struct {
	What  string // what went over the limit, e.g. "step value at key \"3\" is 5000000 bytes"
	Limit string // the Config field, e.g. "MaxPayloadBytes"
	Value string // the limit's value, e.g. "4194304 bytes (4 MiB)"
	// Hint says where the limit is set, as Config.LimitHint gives it
	// (skein's CLI: its flag, e.g. "--max-payload-bytes"); "" for none.
	Hint string
}

func (e *Error) Error() string {
	if e.Hint == "" {
		return fmt.Sprintf("%s (limit Config.%s = %s)", e.What, e.Limit, e.Value)
	}
	return fmt.Sprintf("%s (limit Config.%s = %s; %s)", e.What, e.Limit, e.Value, e.Hint)
}

// Hints gives the hint of a Config field (nil: none).
type Hints func(field string) string

// Of returns the hint of field, "" for none.
func (h Hints) Of(field string) string {
	if h == nil {
		return ""
	}
	return h(field)
}

// New returns the error of what going over the limit of field, whose
// value is value, with its hint.
func (h Hints) New(what, field, value string) *Error {
	return &Error{What: what, Limit: field, Value: value, Hint: h.Of(field)}
}

// Suffix is "; hint", or "" for no hint.
func Suffix(hint string) string {
	if hint == "" {
		return ""
	}
	return "; " + hint
}

// Bytes writes a byte count as the limits' messages do: "4194304 bytes
// (4 MiB)".
func Bytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
