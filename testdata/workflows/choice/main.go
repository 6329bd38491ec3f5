// Command choice holds workflows whose later ops depend on a recorded
// choice (skein.Select), for the determinism checker's tests: they replay
// exactly, yet a key names different ops in different schedules, and the
// checker must say which choice caused it instead of failing them.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

var names = []string{"a", "b"}

// pick calls two activities, selects the first to finish, and runs a
// step named after the winner at key 4 (the select itself is not an op).
func pick(ctx *skein.Context, _ any) (string, error) {
	a := skein.Call[string](ctx, "a", nil)
	b := skein.Call[string](ctx, "b", nil)
	i, err := skein.Select(ctx, a, b)
	if err != nil {
		return "", err
	}
	w := names[i]
	return skein.Step(ctx, "after_"+w, func(*skein.StepContext) (string, error) { return w + " won", nil })
}

// pickInTask makes the choice in a task of its own; the root names its
// step after the task's result (the choice reaches it through the join).
func pickInTask(ctx *skein.Context, _ any) (string, error) {
	winner := skein.Go(ctx, func(ctx *skein.Context) (string, error) {
		a := skein.Sleep(ctx, 10*time.Millisecond)
		b := skein.Call[string](ctx, "b", nil)
		i, err := skein.Select(ctx, a, b)
		return names[i], err
	})
	w, err := winner.Get(ctx)
	if err != nil {
		return "", err
	}
	return skein.Step(ctx, "after_"+w, func(*skein.StepContext) (string, error) { return w + " won", nil })
}

// mixed is pick plus the race of examples/race (two chains of two steps
// spawned before the choice): the chains' ids owe nothing to the choice.
func mixed(ctx *skein.Context, _ any) ([]string, error) {
	chain := func(name string) skein.Future[string] {
		return skein.Go(ctx, func(ctx *skein.Context) (string, error) {
			v, err := skein.Step(ctx, name, func(s *skein.StepContext) (string, error) { return name, nil })
			if err != nil {
				return "", err
			}
			return skein.Step(ctx, "mark", func(*skein.StepContext) (string, error) { return v + "!", nil })
		})
	}
	x, y := chain("x"), chain("y")
	w, err := pick(ctx, nil)
	if err != nil {
		return nil, err
	}
	vx, err := x.Get(ctx)
	if err != nil {
		return nil, err
	}
	vy, err := y.Get(ctx)
	return []string{w, vx, vy}, err
}

func main() {
	skein.Register("pick", pick)
	skein.Register("pick_in_task", pickInTask)
	skein.Register("mixed", mixed)
	skein.Main()
}
