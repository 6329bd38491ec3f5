package host

import (
	"context"

	"github.com/skeinrun/skein/host/internal/exec"
)

// ActivityInfo tells an activity which op it runs for.
type ActivityInfo = exec.ActivityInfo

// ActivityInfoFrom returns the op an activity runs for, from the context
// the host passes it. Use RunID and Key as an idempotency key towards
// other systems: an activity runs at least once, and again after a
// restart that interrupted it.
func ActivityInfoFrom(ctx context.Context) (ActivityInfo, bool) { return exec.ActivityInfoFrom(ctx) }

// NonRetryableError marks an activity error that no retry policy retries.
type NonRetryableError = exec.NonRetryableError

// NonRetryable wraps an activity's error so that it is not retried.
func NonRetryable(err error) error { return exec.NonRetryable(err) }

// DefaultTaskLeaseTTL is the default of Config.TaskLeaseTTL.
const DefaultTaskLeaseTTL = exec.DefaultTaskLeaseTTL
