package activity_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/skeinrun/skein/activity"
)

type order struct {
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

type receipt struct {
	Item  string `json:"item"`
	Total int    `json:"total"`
}

func TestTyped(t *testing.T) {
	var got order
	fn := activity.Typed(func(_ context.Context, o order) (receipt, error) {
		got = o
		return receipt{Item: o.Item, Total: 3 * o.Qty}, nil
	})
	out, err := fn(context.Background(), []byte(`{"item":"book","qty":2}`))
	if err != nil || string(out) != `{"item":"book","total":6}` || got != (order{"book", 2}) {
		t.Fatalf("Typed: got %s, %v (input %+v); want {\"item\":\"book\",\"total\":6}", out, err, got)
	}
	// An empty input is the zero value.
	if out, err := fn(context.Background(), nil); err != nil || string(out) != `{"item":"","total":0}` {
		t.Errorf("Typed(empty input): got %s, %v", out, err)
	}
}

func TestTypedBadInput(t *testing.T) {
	called := false
	fn := activity.Typed(func(context.Context, order) (receipt, error) { called = true; return receipt{}, nil })
	_, err := fn(context.Background(), []byte(`{"qty":"two"}`))
	var nr *activity.NonRetryableError
	if !errors.As(err, &nr) {
		t.Fatalf("Typed(bad input): %v, want a *NonRetryableError", err)
	}
	for _, want := range []string{`{\"qty\":\"two\"}`, "activity_test.order"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Typed(bad input): %q does not name %s", err, want)
		}
	}
	var je *json.UnmarshalTypeError
	if !errors.As(err, &je) {
		t.Errorf("Typed(bad input): %v does not wrap the decoder's error", err)
	}
	if called {
		t.Error("Typed(bad input) called the function")
	}
}

func TestTypedBadOutput(t *testing.T) {
	fn := activity.Typed(func(context.Context, order) (chan int, error) { return make(chan int), nil })
	_, err := fn(context.Background(), nil)
	var nr *activity.NonRetryableError
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), "chan int does not encode to JSON") {
		t.Fatalf("Typed(bad output): %v, want a *NonRetryableError naming chan int", err)
	}
}

func TestTypedError(t *testing.T) {
	boom := errors.New("boom")
	fn := activity.Typed(func(context.Context, order) (receipt, error) { return receipt{}, boom })
	out, err := fn(context.Background(), nil)
	var nr *activity.NonRetryableError
	if out != nil || err != boom || errors.As(err, &nr) {
		t.Fatalf("Typed(failing fn): %s, %v; want the function's error as is (retryable)", out, err)
	}
}

func TestNonRetryable(t *testing.T) {
	if activity.NonRetryable(nil) != nil {
		t.Fatal("NonRetryable(nil) is not nil")
	}
	err := fmt.Errorf("charge: %w", activity.NonRetryable(fmt.Errorf("card: %w", fs.ErrPermission)))
	var nr *activity.NonRetryableError
	if !errors.As(err, &nr) {
		t.Fatalf("errors.As(%v, *NonRetryableError) is false through a wrap", err)
	}
	if !errors.Is(err, fs.ErrPermission) || nr.Error() != "card: permission denied" {
		t.Errorf("the NonRetryableError (%q) hides its cause: errors.Is = %v", nr, errors.Is(err, fs.ErrPermission))
	}
	if errors.As(errors.New("plain"), &nr) {
		t.Error("a plain error is a NonRetryableError")
	}
}

func TestInfoFrom(t *testing.T) {
	if _, ok := activity.InfoFrom(context.Background()); ok {
		t.Fatal("InfoFrom(Background) found an Info")
	}
	want := activity.Info{RunID: "r1", Key: "1.2", Name: "charge", Attempt: 3, IdempotencyKey: "r1.1.2"}
	ctx, cancel := context.WithCancel(activity.WithInfo(context.Background(), want))
	defer cancel()
	if got, ok := activity.InfoFrom(ctx); !ok || got != want {
		t.Fatalf("InfoFrom: %+v, %v; want %+v", got, ok, want)
	}
}
