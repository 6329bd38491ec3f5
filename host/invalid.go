package host

import "fmt"

// invalidError is a request's error that matches ErrInvalid without
// ErrInvalid's words at the end of its message: the message says what
// rule was broken, and clients print it as it is.
type invalidError struct{ err error }

func (e invalidError) Error() string { return e.err.Error() }

func (e invalidError) Unwrap() []error { return []error{e.err, ErrInvalid} }

// invalid is err, matched by ErrInvalid too.
func invalid(err error) error { return invalidError{err} }

// invalidf is fmt.Errorf, matched by ErrInvalid too.
func invalidf(format string, args ...any) error {
	return invalidError{fmt.Errorf(format, args...)}
}
