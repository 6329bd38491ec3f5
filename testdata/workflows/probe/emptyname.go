package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// emptyname gives every op kind an explicit empty name, skein.ID(""). Each
// must fail with an id error of rule "empty" before anything is issued
// (no body runs, no position is used), so the step "after" that follows
// them still takes key 1. It returns, per op, "rule|scope|message".
func emptyname(ctx *skein.Context, _ struct{}) (map[string]string, error) {
	out := map[string]string{}
	note := func(label string, err error) {
		var idErr *skein.StepIDError
		if errors.As(err, &idErr) {
			out[label] = idErr.Rule + "|" + idErr.Scope + "|" + idErr.Msg
		} else {
			out[label] = fmt.Sprint("not an id error: ", err)
		}
	}
	_, err := skein.Step(ctx, "body", func(*skein.StepContext) (string, error) { return "ran", nil }, skein.ID(""))
	note("step", err)
	_, err = skein.Go(ctx, func(*skein.Context) (int, error) { return 1, nil }, skein.ID("")).Get(ctx)
	note("go", err)
	note("parallel", skein.Parallel(ctx, skein.ID("")).Wait(ctx))
	_, err = skein.Sleep(ctx, time.Millisecond, skein.ID("")).Get(ctx)
	note("sleep", err)
	_, err = skein.Promise[int](ctx, skein.ID("")).Get(ctx)
	note("promise", err)
	_, err = skein.Call[int](ctx, "nothing", nil, skein.ID("")).Get(ctx)
	note("call", err)
	_, err = skein.Child[int](ctx, "emptyname", nil, skein.ID("")).Get(ctx)
	note("child", err)
	if _, err := skein.Step(ctx, "after", func(*skein.StepContext) (int, error) { return 1, nil }); err != nil {
		return nil, err
	}
	// In a spawned task (scope t2) the error names the task's scope.
	inner, err := skein.Go(ctx, func(c *skein.Context) (string, error) {
		_, err := skein.Step(c, "body", func(*skein.StepContext) (string, error) { return "ran", nil }, skein.ID(""))
		var idErr *skein.StepIDError
		if !errors.As(err, &idErr) {
			return "", fmt.Errorf("not an id error: %v", err)
		}
		return idErr.Rule + "|" + idErr.Scope + "|" + idErr.Msg, nil
	}).Get(ctx)
	if err != nil {
		return nil, err
	}
	out["in-task"] = inner
	return out, nil
}
