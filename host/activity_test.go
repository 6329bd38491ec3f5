//lint:file-ignore SA1019 this file tests the deprecated names that forward to package activity.

package host_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host"
)

// Typed decodes the input and encodes the output as JSON; an input that
// does not decode fails without retries.
func TestTyped(t *testing.T) {
	type in struct{ N int }
	act := host.Typed(func(_ context.Context, i in) ([]int, error) { return []int{i.N, i.N * 2}, nil })
	out, err := act(context.Background(), []byte(`{"N":4}`))
	if err != nil || string(out) != "[4,8]" {
		t.Fatalf("got %s, %v", out, err)
	}
	_, err = act(context.Background(), []byte(`"four"`))
	var nr *host.NonRetryableError
	if !errors.As(err, &nr) || !regexp.MustCompile(`does not decode into host_test\.in`).MatchString(err.Error()) {
		t.Fatalf("bad input: %v", err)
	}
	failing := host.Typed(func(context.Context, string) (string, error) { return "", errors.New("boom") })
	if _, err := failing(context.Background(), []byte(`"x"`)); err == nil || err.Error() != "boom" || errors.As(err, &nr) {
		t.Fatalf("failing activity: %v", err)
	}
}

// The host's old activity names are package activity's: an error made by
// host.NonRetryable is an *activity.NonRetryableError, host.ActivityInfoFrom
// reads activity.WithInfo, and a host.Activity is an activity.Func.
func TestDeprecatedActivityNames(t *testing.T) {
	var nr *activity.NonRetryableError
	if err := fmt.Errorf("wrapped: %w", host.NonRetryable(errors.New("declined"))); !errors.As(err, &nr) || nr.Error() != "declined" {
		t.Errorf("host.NonRetryable: errors.As(%v, *activity.NonRetryableError) = %v", err, errors.As(err, &nr))
	}
	want := host.ActivityInfo{RunID: "r", Key: "1", Name: "a", Attempt: 2, IdempotencyKey: "r.1"}
	if got, ok := host.ActivityInfoFrom(activity.WithInfo(context.Background(), want)); !ok || got != want {
		t.Errorf("host.ActivityInfoFrom: %+v, %v; want %+v", got, ok, want)
	}
	var fn host.Activity = activity.Typed(func(context.Context, int) (int, error) { return 1, nil })
	var _ activity.Func = fn
	if host.HTTPActivity != activity.HTTPActivity {
		t.Errorf("host.HTTPActivity %q, activity.HTTPActivity %q", host.HTTPActivity, activity.HTTPActivity)
	}
}
