package host

import (
	"context"

	"github.com/skeinrun/skein/activity"
)

// The activity contract is package activity's; these names forward to it
// for one release.

// Activity is a function a workflow calls with skein.Call.
//
// Deprecated: use activity.Func.
type Activity = activity.Func

// ActivityInfo tells an activity which call it runs for.
//
// Deprecated: use activity.Info.
type ActivityInfo = activity.Info

// NonRetryableError marks an activity error that no retry policy retries.
//
// Deprecated: use activity.NonRetryableError.
type NonRetryableError = activity.NonRetryableError

// Typed adapts a function with a Go input and output type to an activity.
//
// Deprecated: use activity.Typed.
func Typed[In, Out any](fn func(context.Context, In) (Out, error)) activity.Func {
	return activity.Typed(fn)
}

// ActivityInfoFrom returns the call an activity runs for.
//
// Deprecated: use activity.InfoFrom.
func ActivityInfoFrom(ctx context.Context) (activity.Info, bool) { return activity.InfoFrom(ctx) }

// NonRetryable wraps an activity's error so that it is not retried.
//
// Deprecated: use activity.NonRetryable.
func NonRetryable(err error) error { return activity.NonRetryable(err) }
