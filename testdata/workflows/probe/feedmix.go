package main

import (
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// feedmix mixes, in one replayed history, the ops a feed of recorded
// outcomes hands over (unnamed steps, sleeps) with the ones it does not
// (named steps, a step with a retry policy, a spawned task's steps, timers
// settled at an idle point), and selects on timers whose ops were fed.
type feedmixIn struct {
	N int `json:"n"`
}

type feedmixOut struct {
	Sum     int      `json:"sum"`
	TaskSum int      `json:"task_sum"`
	Keys    []string `json:"keys"`
	Picked  int      `json:"picked"`
}

func feedmix(ctx *skein.Context, in feedmixIn) (feedmixOut, error) {
	var out feedmixOut
	var timers []skein.Future[struct{}]
	for i := 1; i <= in.N; i++ {
		var opts []skein.Option
		switch {
		case i%10 == 0:
			opts = append(opts, skein.ID(fmt.Sprintf("n%d", i)))
		case i%13 == 0:
			opts = append(opts, skein.Retry(skein.RetryPolicy{MaxAttempts: 2}))
		}
		v, err := skein.Step(ctx, "inc", func(*skein.StepContext) (int, error) { return i, nil }, opts...)
		if err != nil {
			return out, err
		}
		out.Sum += v
		if i%7 == 0 {
			f := skein.Sleep(ctx, time.Millisecond)
			timers = append(timers, f)
			out.Keys = append(out.Keys, f.Key())
		}
		if i == in.N/2 {
			if out.TaskSum, err = feedTask(ctx); err != nil {
				return out, err
			}
		}
	}
	for _, f := range timers {
		if _, err := f.Get(ctx); err != nil {
			return out, err
		}
	}
	if len(timers) > 1 {
		picked, err := skein.Select(ctx, timers[len(timers)-1], timers[0])
		if err != nil {
			return out, err
		}
		out.Picked = picked
	}
	return out, nil
}

// feedTask runs five steps in a task of its own and returns their sum.
func feedTask(ctx *skein.Context) (int, error) {
	return skein.Go(ctx, func(c *skein.Context) (int, error) {
		sum := 0
		for j := 1; j <= 5; j++ {
			v, err := skein.Step(c, "task", func(*skein.StepContext) (int, error) { return j, nil })
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	}).Get(ctx)
}
