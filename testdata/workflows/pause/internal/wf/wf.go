// Package wf holds the workflows of the pause tests (docs/operations.md,
// "Pausing runs"), in two versions of one module (../v1, ../v2) that
// differ in what their steps return.
package wf

import (
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// HoldIn is the input of hold.
type HoldIn struct {
	MS int `json:"ms"`
}

// Register registers the workflows of version v ("v1", "v2").
func Register(v string) {
	// hold waits on a durable timer of ms and on the promise
	// "{run}.approve", then records both in a step.
	skein.Register("hold", func(ctx *skein.Context, in HoldIn) (string, error) {
		timer := skein.Sleep(ctx, time.Duration(in.MS)*time.Millisecond)
		approval := skein.Promise[string](ctx, skein.ID("approve"))
		if _, err := timer.Get(ctx); err != nil {
			return "", err
		}
		ok, err := approval.Get(ctx)
		if err != nil {
			return "", err
		}
		return skein.Step(ctx, "done", func(*skein.StepContext) (string, error) {
			return fmt.Sprintf("%s: slept %dms, approved %s", v, in.MS, ok), nil
		})
	})
	// flaky charges in a step retried twice that pauses the run when its
	// retries run out: version 1 is always declined, version 2 charges.
	skein.Register("flaky", func(ctx *skein.Context, _ any) (string, error) {
		retry := skein.Retry(skein.RetryPolicy{MaxAttempts: 2, InitialBackoff: 10 * time.Millisecond, OnExhausted: skein.Pause})
		return skein.Step(ctx, "charge", func(*skein.StepContext) (string, error) {
			if v == "v1" {
				return "", errors.New("card declined (v1)")
			}
			return "charged (" + v + ")", nil
		}, retry)
	})
	// charge calls the activity "charge" retried twice, pausing the run
	// when its retries run out.
	skein.Register("charge", func(ctx *skein.Context, in string) (string, error) {
		retry := skein.Retry(skein.RetryPolicy{MaxAttempts: 2, InitialBackoff: 10 * time.Millisecond, OnExhausted: skein.Pause})
		return skein.Call[string](ctx, "charge", in, retry).Get(ctx)
	})
}
