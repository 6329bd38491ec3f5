package worker

import (
	"context"

	"github.com/skeinrun/skein/activity"
)

// The activity contract is package activity's; these names forward to it
// for one release.

// Func is an activity.
//
// Deprecated: use activity.Func. Its input and output are []byte, no
// longer json.RawMessage: a function literal declared with
// json.RawMessage must change its signature.
type Func = activity.Func

// Info is the call an activity runs for.
//
// Deprecated: use activity.Info.
type Info = activity.Info

// NonRetryableError marks an activity's error that ends the call's
// retries.
//
// Deprecated: use activity.NonRetryableError.
type NonRetryableError = activity.NonRetryableError

// Typed adapts a function with a Go input and output type to an activity.
//
// Deprecated: use activity.Typed.
func Typed[In, Out any](fn func(context.Context, In) (Out, error)) activity.Func {
	return activity.Typed(fn)
}

// InfoFrom returns the call an activity's context runs for.
//
// Deprecated: use activity.InfoFrom.
func InfoFrom(ctx context.Context) (activity.Info, bool) { return activity.InfoFrom(ctx) }

// NonRetryable wraps err so that no retry policy retries it.
//
// Deprecated: use activity.NonRetryable.
func NonRetryable(err error) error { return activity.NonRetryable(err) }
