// Command fanout200 is the checker's cost benchmark (issue 33): 200 tasks
// started with skein.Go, each running two steps, joined by the root. Its
// journal has 400 step outcomes, and every seeded schedule interleaves the
// tasks differently, so a check replays 200 schedules × 401 crash points
// of a 400-record journal (host/check_bench_test.go).
package main

import (
	"fmt"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// in is the number of tasks; 200 when zero.
type in struct {
	N int `json:"n"`
}

func fanout(ctx *skein.Context, i in) (int, error) {
	n := i.N
	if n == 0 {
		n = 200
	}
	fs := make([]skein.Future[int], n)
	for k := range fs {
		fs[k] = skein.Go(ctx, func(ctx *skein.Context) (int, error) {
			a, err := skein.Step(ctx, "first", func(*skein.StepContext) (int, error) { return k, nil })
			if err != nil {
				return 0, err
			}
			return skein.Step(ctx, "second", func(*skein.StepContext) (int, error) { return a * 2, nil })
		})
	}
	sum := 0
	for k, f := range fs {
		v, err := f.Get(ctx)
		if err != nil {
			return 0, fmt.Errorf("task %d: %w", k, err)
		}
		sum += v
	}
	return sum, nil
}

func main() {
	skein.Register("fanout", fanout)
	skein.Main()
}
