// Command features holds workflows that the host tests use to exercise
// retries, timeouts, child runs, external promises and cancellation.
package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type callIn struct {
	Activity  string `json:"activity"`
	Max       int    `json:"max"`        // retry attempts; 0: no retry policy
	TimeoutMS int    `json:"timeout_ms"` // per attempt; 0: none
}

// call calls an activity with a retry policy and a timeout.
func call(ctx *skein.Context, in callIn) (string, error) {
	var opts []skein.Option
	if in.Max > 0 {
		opts = append(opts, skein.Retry(skein.RetryPolicy{MaxAttempts: in.Max, InitialBackoff: time.Millisecond, NonRetryable: []string{"fatal"}}))
	}
	if in.TimeoutMS > 0 {
		opts = append(opts, skein.Timeout(time.Duration(in.TimeoutMS)*time.Millisecond))
	}
	return skein.Call[string](ctx, in.Activity, "ping", opts...).Get(ctx)
}

type stepIn struct {
	Fail      int    `json:"fail"`       // attempts that fail before one succeeds
	Error     string `json:"error"`      // their error text
	Final     bool   `json:"final"`      // fail with skein.NonRetryable
	Max       int    `json:"max"`        // retry attempts
	TimeoutMS int    `json:"timeout_ms"` // per attempt; 0: none
	SleepMS   int    `json:"sleep_ms"`   // each attempt's body waits this long
}

var attempts int // body executions in this instance

// retrystep runs a step that fails its first attempts.
func retrystep(ctx *skein.Context, in stepIn) (string, error) {
	opts := []skein.Option{skein.Retry(skein.RetryPolicy{MaxAttempts: in.Max, InitialBackoff: time.Millisecond})}
	if in.TimeoutMS > 0 {
		opts = append(opts, skein.Timeout(time.Duration(in.TimeoutMS)*time.Millisecond))
	}
	return skein.Step(ctx, "flaky", func(s *skein.StepContext) (string, error) {
		attempts++
		if in.SleepMS > 0 {
			s.Sleep(time.Duration(in.SleepMS) * time.Millisecond)
		}
		if attempts <= in.Fail {
			err := fmt.Errorf("%s (attempt %d)", in.Error, attempts)
			if in.Final {
				return "", skein.NonRetryable(err)
			}
			return "", err
		}
		return fmt.Sprintf("ok after %d", attempts), nil
	}, opts...)
}

// sleeper sleeps, then returns how long.
func sleeper(ctx *skein.Context, ms int) (string, error) {
	d := time.Duration(ms) * time.Millisecond
	if _, err := skein.Sleep(ctx, d).Get(ctx); err != nil {
		return "", err
	}
	return "slept " + d.String(), nil
}

// waiter awaits the promise "ok".
func waiter(ctx *skein.Context, _ any) (string, error) {
	return skein.Promise[string](ctx, skein.ID("ok")).Get(ctx)
}

// parent runs a child workflow and returns its result.
type parentIn struct {
	Child string `json:"child"`
	Input any    `json:"input"`
}

func parent(ctx *skein.Context, in parentIn) (string, error) {
	v, err := skein.Child[string](ctx, in.Child, in.Input).Get(ctx)
	if err != nil {
		return "", fmt.Errorf("child: %w", err)
	}
	return "child said " + v, nil
}

// compensate sleeps an hour; once canceled it checks Context.Err, that a
// new sleep fails at once, and that a step still runs.
func compensate(ctx *skein.Context, _ any) (string, error) {
	_, err := skein.Sleep(ctx, time.Hour).Get(ctx)
	if !errors.Is(err, skein.ErrCanceled) {
		return "", fmt.Errorf("sleep ended with %v, want a cancellation", err)
	}
	cerr := ctx.Err()
	if cerr == nil {
		return "", errors.New("Context.Err is nil after the cancellation")
	}
	if _, err := skein.Sleep(ctx, time.Hour).Get(ctx); !errors.Is(err, skein.ErrCanceled) {
		return "", fmt.Errorf("a sleep after the cancellation ended with %v", err)
	}
	return skein.Step(ctx, "undo", func(*skein.StepContext) (string, error) {
		return "undone: " + cerr.Error(), nil
	})
}

func main() {
	skein.Register("call", call)
	skein.Register("retrystep", retrystep)
	skein.Register("sleeper", sleeper)
	skein.Register("waiter", waiter)
	skein.Register("parent", parent)
	skein.Register("compensate", compensate)
	skein.Main()
}
