// Command timing holds workflows whose result legitimately depends on
// timing, for the determinism checker's tests.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// first calls two activities and returns the name of the one that
// finished first (Select).
func first(ctx *skein.Context, _ any) (string, error) {
	a := skein.Call[string](ctx, "a", nil)
	b := skein.Call[string](ctx, "b", nil)
	i, err := skein.Select(ctx, a, b)
	if err != nil {
		return "", err
	}
	return []string{"a", "b"}[i], nil
}

// shared: two tasks append to a slice they share after a step each; the
// order depends on timing, the ids do not.
func shared(ctx *skein.Context, _ any) ([]string, error) {
	var order []string
	g := skein.Parallel(ctx)
	for _, name := range []string{"x", "y"} {
		g.Go(func(ctx *skein.Context) error {
			v, err := skein.Step(ctx, "work", func(s *skein.StepContext) (string, error) {
				s.Sleep(10 * time.Millisecond)
				return name, nil
			})
			order = append(order, v)
			return err
		})
	}
	if err := g.Wait(ctx); err != nil {
		return nil, err
	}
	return order, nil
}

func main() {
	skein.Register("first", first)
	skein.Register("shared", shared)
	skein.Main()
}
