// Package activity is the one contract of a skein activity, the Go
// function that serves a workflow's skein.Call: the function type (Func),
// its typed adapter (Typed), the call it runs for (Info), the error that
// ends its retries (NonRetryable), and the wire types of the built-in HTTP
// activity (HTTPRequest, HTTPResponse).
//
// The host (Host.RegisterActivity, and the fakes of a check or simulation),
// the worker package (activities served to a skein server from another
// process) and the Go guest SDK (skein.NonRetryable, skein.HTTP) all use
// these definitions, so an activity is written once and served either
// way:
//
//	charge := activity.Typed(func(ctx context.Context, o Order) (Receipt, error) {
//		info, _ := activity.InfoFrom(ctx) // run, key, name, attempt, idempotency key
//		…
//	})
//	h.RegisterActivity("charge", charge) // in process, or
//	w.Register("charge", charge)         // in a worker
//
// The package imports only the standard library and builds for every
// target, wasip1 included: the guest SDK imports it too.
package activity

import (
	"context"
	"encoding/json"
	"fmt"
)

// Func is an activity: it receives the call's input (JSON, what the
// workflow passed to skein.Call) and returns its result (JSON; empty
// means null) or an error. Its context carries the call's Info and ends
// at the attempt's timeout, when the attempt is canceled (its run ended,
// its lease was lost), or when the host or worker running it stops. An
// error fails the attempt, which the call's retry policy may retry,
// unless it is or wraps a *NonRetryableError. A panic fails the attempt
// like an error.
type Func func(ctx context.Context, input []byte) ([]byte, error)

// Typed adapts a function with a Go input and output type to a Func: the
// input is decoded from JSON into In, and the Out returned is encoded to
// JSON. An input that does not decode into In fails the call without
// retries, with an error that quotes the input and names In; so does an
// output that does not encode. An empty input leaves In its zero value.
//
//	h.RegisterActivity("charge", activity.Typed(func(ctx context.Context, o Order) (Receipt, error) { … }))
func Typed[In, Out any](fn func(context.Context, In) (Out, error)) Func {
	return func(ctx context.Context, input []byte) ([]byte, error) {
		var in In
		if len(input) > 0 {
			if err := json.Unmarshal(input, &in); err != nil {
				return nil, NonRetryable(fmt.Errorf("activity input %.100q does not decode into %T: %w", input, in, err))
			}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, NonRetryable(fmt.Errorf("activity output %T does not encode to JSON: %w", out, err))
		}
		return b, nil
	}
}
