package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// Retries that run out under RetryPolicy{OnExhausted: Pause}: the op
// stays pending with its attempts used and the run is paused; after an
// unpause the op has a fresh round of MaxAttempts attempts.

// PausedBy is who a run paused by its retry policy is paused by.
const PausedBy = "retry policy"

// maxReasonError bounds the last error quoted in a pause's reason.
const maxReasonError = 1000

// roundAttempt is attempt counted within its round of MaxAttempts: an op
// whose run pauses when its retries run out starts a fresh round after
// each pause, so the count of the attempts made alone tells where it is.
func roundAttempt(o abi.OpOptions, attempt int) int {
	if o.OnExhausted != abi.OnExhaustedPause || attempt < 1 {
		return attempt
	}
	return (attempt-1)%max(int(o.MaxAttempts), 1) + 1
}

// Exhausted reports whether an attempt that failed with err ran out of
// retries under a policy that pauses the run then: the error was
// retryable, the attempts of its round were not.
func Exhausted(o abi.OpOptions, err error, attempt int) bool {
	return o.OnExhausted == abi.OnExhaustedPause && err != nil && !Retryable(o, err, attempt) &&
		retryableError(o, err)
}

// exhaustedReason is the reason of a pause by the retry policy of the op
// kind fn at key, after attempts that ended with last.
func exhaustedReason(kind, fn, key string, attempts int, last string) string {
	if r := []rune(last); len(r) > maxReasonError {
		last = string(r[:maxReasonError]) + "…"
	}
	return fmt.Sprintf("%s %q (key %s) ran out of retries after %d attempts; last error: %s", kind, fn, key, attempts, last)
}

// pauseRun pauses run id by its retry policy and asks its execution to
// stop (mailbox.Pause).
func (rs *RunState) pauseRun(ctx context.Context, st store.Store, reason string) error {
	if _, err := st.PauseRun(context.WithoutCancel(ctx), rs.Run.ID, PausedBy, store.CleanText(reason), time.Now().UnixNano()); err != nil {
		return fmt.Errorf("run %s: pause by the retry policy: %w", rs.Run.ID, err)
	}
	rs.MB.Pause()
	return nil
}

// pauseStep ends the execution at a step whose body's retries ran out:
// the step is recorded pending with its attempts, the run paused, and
// the execution stops here (its records are committed by the drive).
func (x *Exec) pauseStep(ctx context.Context, p sched.PromiseID, key, last string) error {
	attempts := x.S.Attempts(p)
	x.S.RecordStepPending(p)
	reason := exhaustedReason("step", x.S.PromiseFunction(p), key, attempts, last)
	var err error
	x.blocking(func() { err = x.rs.pauseRun(ctx, x.h.Config().Store, reason) })
	if err != nil {
		return x.stop(Unrecorded, err)
	}
	return x.stop(Paused, errors.New(reason))
}
