// Command race is the reference race of docs/design.md ("Ids") as a skein
// workflow: two chains of steps run concurrently, the one that starts
// first finishes last, and a pending timer forces the run to be replayed.
// With ids keyed on task lineage the result is right on every replay.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

func race(ctx *skein.Context, _ struct{}) ([]string, error) {
	timer := skein.Sleep(ctx, 200*time.Millisecond) // key 1

	chainA := skein.Go(ctx, func(ctx *skein.Context) (string, error) { // scope t2
		a, err := skein.Step(ctx, "slow", func(s *skein.StepContext) (string, error) {
			s.Sleep(100 * time.Millisecond) // loses the live race
			return "slow-result", nil
		})
		if err != nil {
			return "", err
		}
		return skein.Step(ctx, "mark", func(*skein.StepContext) (string, error) { return "s2:" + a, nil })
	})
	chainB := skein.Go(ctx, func(ctx *skein.Context) (string, error) { // scope t3
		b, err := skein.Step(ctx, "fast", func(*skein.StepContext) (string, error) { return "fast-result", nil })
		if err != nil {
			return "", err
		}
		return skein.Step(ctx, "mark", func(*skein.StepContext) (string, error) { return "f2:" + b, nil })
	})

	r1, err := chainA.Get(ctx)
	if err != nil {
		return nil, err
	}
	r2, err := chainB.Get(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := timer.Get(ctx); err != nil {
		return nil, err
	}
	return []string{r1, r2}, nil
}

func main() {
	skein.Register("race", race)
	skein.Main()
}
