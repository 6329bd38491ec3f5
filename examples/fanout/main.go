// Command fanout squares 1..n in a parallel fork of n branches, each
// branch a child workflow run (or, with "steps": true, a step), and sums
// the squares.
package main

import "github.com/skeinrun/skein/guest-sdk/skein"

type input struct {
	N     int  `json:"n"`
	Steps bool `json:"steps"` // square in steps instead of child runs
}

func square(ctx *skein.Context, i int) (int, error) {
	return skein.Step(ctx, "square", func(*skein.StepContext) (int, error) { return i * i, nil })
}

func fanout(ctx *skein.Context, in input) (int, error) {
	squares := make([]int, in.N)
	g := skein.Parallel(ctx, skein.ID("fan"))
	for i := range in.N {
		g.Go(func(ctx *skein.Context) error {
			var err error
			if in.Steps {
				squares[i], err = square(ctx, i+1)
			} else {
				squares[i], err = skein.Child[int](ctx, "square", i+1).Get(ctx)
			}
			return err
		})
	}
	if err := g.Wait(ctx); err != nil {
		return 0, err
	}
	sum := 0
	for _, s := range squares {
		sum += s
	}
	return sum, nil
}

func main() {
	skein.Register("fanout", fanout)
	skein.Register("square", square)
	skein.Main()
}
