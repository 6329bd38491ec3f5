// Command bench holds the workflows of the performance workloads
// (internal/bench, `skein bench`, `make bench`). Every step is a no-op
// that returns a small integer, so what is measured is the engine: ids,
// the scheduler, the guest<->host calls and the store.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type stepsIn struct {
	N int `json:"n"`
	// SleepMS, if > 0, ends the run with a durable timer of that length
	// after the steps, so the run suspends with its whole history stored.
	SleepMS int `json:"sleep_ms"`
}

// steps runs N no-op steps one after the other (keys 1..N).
func steps(ctx *skein.Context, in stepsIn) (int, error) {
	sum := 0
	for i := 1; i <= in.N; i++ {
		v, err := skein.Step(ctx, "noop", func(*skein.StepContext) (int, error) { return i, nil })
		if err != nil {
			return 0, err
		}
		sum += v
	}
	if in.SleepMS > 0 {
		if _, err := skein.Sleep(ctx, time.Duration(in.SleepMS)*time.Millisecond).Get(ctx); err != nil {
			return 0, err
		}
	}
	return sum, nil
}

// fanout spawns N tasks with skein.Go, each running one no-op step, and
// joins them all.
func fanout(ctx *skein.Context, in stepsIn) (int, error) {
	futs := make([]skein.Future[int], in.N)
	for i := range futs {
		futs[i] = skein.Go(ctx, func(c *skein.Context) (int, error) {
			return skein.Step(c, "noop", func(*skein.StepContext) (int, error) { return i, nil })
		})
	}
	return sumAll(ctx, futs)
}

// sumAll joins futs in order and returns the sum of their results.
func sumAll(ctx *skein.Context, futs []skein.Future[int]) (int, error) {
	sum := 0
	for _, f := range futs {
		v, err := f.Get(ctx)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// call makes one host activity call as its first op and returns its
// result. The activation workload times the activity's arrival; the
// memory workload holds the activity to keep the instance live.
func call(ctx *skein.Context, activity string) (string, error) {
	return skein.Call[string](ctx, activity, nil).Get(ctx)
}

type callsIn struct {
	N        int    `json:"n"`
	Activity string `json:"activity"`
}

// calls makes N activity calls one after the other, with inputs 0..N-1,
// and returns the sum of their results.
func calls(ctx *skein.Context, in callsIn) (int, error) {
	sum := 0
	for i := range in.N {
		v, err := skein.Call[int](ctx, in.Activity, i).Get(ctx)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

type nestedIn struct {
	Depth int `json:"depth"`
	Width int `json:"width"`
}

// nested spawns Width tasks, each of which spawns Width more, Depth
// levels deep; every task runs one no-op step and joins its children.
// It measures the checker on nested spawns (`skein check --workflow
// nested --input '{"depth":3,"width":2}'`).
func nested(ctx *skein.Context, in nestedIn) (int, error) {
	if in.Depth <= 0 {
		return skein.Step(ctx, "leaf", func(*skein.StepContext) (int, error) { return 1, nil })
	}
	futs := make([]skein.Future[int], in.Width)
	for i := range futs {
		futs[i] = skein.Go(ctx, func(c *skein.Context) (int, error) {
			return nested(c, nestedIn{Depth: in.Depth - 1, Width: in.Width})
		})
	}
	return sumAll(ctx, futs)
}

func main() {
	skein.Register("nested", nested)
	skein.Register("calls", calls)
	skein.Register("steps", steps)
	skein.Register("fanout", fanout)
	skein.Register("call", call)
	skein.Main()
}
