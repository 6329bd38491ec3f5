package activity

// NonRetryableError marks an error that ends the retries of the call (or
// step) that failed with it: no retry policy retries it, and the workflow
// receives it at once. Make one with NonRetryable; find one in an error
// chain with errors.As.
type NonRetryableError struct{ Err error }

// Error returns the wrapped error's text.
func (e *NonRetryableError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *NonRetryableError) Unwrap() error { return e.Err }

// NonRetryable wraps err in a *NonRetryableError, so that no retry policy
// retries it; NonRetryable(nil) is nil.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &NonRetryableError{Err: err}
}
