//lint:file-ignore SA1019 this file tests the deprecated names that forward to package activity.

package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/skeinrun/skein/activity"
)

// The worker's old activity names are package activity's: an error made
// by NonRetryable is an *activity.NonRetryableError, InfoFrom reads
// activity.WithInfo, and Typed makes an activity.Func.
func TestDeprecatedActivityNames(t *testing.T) {
	var nr *activity.NonRetryableError
	if err := fmt.Errorf("wrapped: %w", NonRetryable(errors.New("declined"))); !errors.As(err, &nr) || nr.Error() != "declined" {
		t.Errorf("worker.NonRetryable: errors.As(%v, *activity.NonRetryableError) = %v", err, errors.As(err, &nr))
	}
	want := Info{RunID: "r", Key: "1", Name: "a", Attempt: 2, IdempotencyKey: "r.1"}
	if got, ok := InfoFrom(activity.WithInfo(context.Background(), want)); !ok || got != want {
		t.Errorf("worker.InfoFrom: %+v, %v; want %+v", got, ok, want)
	}
	var fn Func = Typed(func(context.Context, int) (int, error) { return 1, nil })
	if out, err := fn(context.Background(), []byte("7")); err != nil || string(out) != "1" {
		t.Errorf("worker.Typed: %s, %v", out, err)
	}
}
