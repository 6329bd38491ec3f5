package main

import (
	"runtime"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// wavesIn sizes the waves workflow.
type wavesIn struct {
	Tasks int `json:"tasks"`
}

// wavesOut is what waves saw: each wave's sum, and the guest's goroutine
// count before the first wave and after each.
type wavesOut struct {
	Sums       [2]int `json:"sums"`
	Goroutines [3]int `json:"goroutines"`
}

// waves runs two waves of in.Tasks tasks. Every task sleeps (so all of a
// wave's tasks are live at once) and returns its index; the root joins
// the wave before starting the next. The SDK keeps the goroutine of a
// finished task for the next task to start, so the second wave reuses
// the first wave's goroutines instead of starting new ones.
func waves(ctx *skein.Context, in wavesIn) (wavesOut, error) {
	out := wavesOut{Goroutines: [3]int{runtime.NumGoroutine()}}
	for w := range 2 {
		futs := make([]skein.Future[int], in.Tasks)
		for i := range futs {
			futs[i] = skein.Go(ctx, func(c *skein.Context) (int, error) {
				if _, err := skein.Sleep(c, time.Duration(in.Tasks-i)*time.Millisecond).Get(c); err != nil {
					return 0, err
				}
				return i, nil
			})
		}
		for _, f := range futs {
			v, err := f.Get(ctx)
			if err != nil {
				return out, err
			}
			out.Sums[w] += v
		}
		out.Goroutines[w+1] = runtime.NumGoroutine()
	}
	return out, nil
}
