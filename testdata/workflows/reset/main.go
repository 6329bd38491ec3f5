// Command reset holds one workflow per shape of journal that a reset
// (host.Reset, docs/api.md "Resetting a run") must cut exactly:
// sequential steps, a spawned task, a parallel fan-out, a child run, a
// select, a timer a later step settles before, a run that suspends on
// a promise, and a run that is live for as long as asked. Every step returns its
// name and the run's tag, so a test sees which ops executed with which
// input; v2 is the same sequence on changed code.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type in struct {
	Tag string `json:"tag"`
}

// step is a step named name that returns name@tag.
func step(ctx *skein.Context, name, tag string) (string, error) {
	return skein.Step(ctx, name, func(*skein.StepContext) (string, error) { return name + "@" + tag, nil })
}

// steps runs the named steps in order and returns their results.
func steps(ctx *skein.Context, tag string, names ...string) ([]string, error) {
	var out []string
	for _, n := range names {
		v, err := step(ctx, n, tag)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// seq: keys 1, 2, 3, 4.
func seq(ctx *skein.Context, i in) ([]string, error) { return steps(ctx, i.Tag, "a", "b", "c", "d") }

// spawn: r1 (1); a task t2 with x1, x2 (t2.1, t2.2); r3 (3), which
// settles before the task runs; then r4 (4) after the task's end.
func spawn(ctx *skein.Context, i in) ([]string, error) {
	r1, err := step(ctx, "r1", i.Tag)
	if err != nil {
		return nil, err
	}
	task := skein.Go(ctx, func(ctx *skein.Context) ([]string, error) { return steps(ctx, i.Tag, "x1", "x2") })
	r3, err := step(ctx, "r3", i.Tag)
	if err != nil {
		return nil, err
	}
	xs, err := task.Get(ctx)
	if err != nil {
		return nil, err
	}
	r4, err := step(ctx, "r4", i.Tag)
	return append(append([]string{r1, r3}, xs...), r4), err
}

// fanout: p0 (1); a fork at 2 with three branches of two steps each
// (2.B.1, 2.B.2); end (3).
func fanout(ctx *skein.Context, i in) ([]string, error) {
	p0, err := step(ctx, "p0", i.Tag)
	if err != nil {
		return nil, err
	}
	res := make([][]string, 3)
	g := skein.Parallel(ctx)
	for b := range res {
		g.Go(func(ctx *skein.Context) error {
			var err error
			res[b], err = steps(ctx, i.Tag, "s1", "s2")
			return err
		})
	}
	if err := g.Wait(ctx); err != nil {
		return nil, err
	}
	end, err := step(ctx, "end", i.Tag)
	out := []string{p0}
	for _, r := range res {
		out = append(out, r...)
	}
	return append(out, end), err
}

// parent: c1 (1); a child run of leaf (2); c3 (3).
func parent(ctx *skein.Context, i in) ([]string, error) {
	c1, err := step(ctx, "c1", i.Tag)
	if err != nil {
		return nil, err
	}
	leaf, err := skein.Child[string](ctx, "leaf", i).Get(ctx)
	if err != nil {
		return nil, err
	}
	c3, err := step(ctx, "c3", i.Tag)
	return []string{c1, leaf, c3}, err
}

// leaf: l1 (1).
func leaf(ctx *skein.Context, i in) (string, error) { return step(ctx, "l1", i.Tag) }

// race: a timer of an hour (1, left pending) against a step whose body
// waits (2), which wins; then after (3).
func race(ctx *skein.Context, i in) ([]string, error) {
	timer := skein.Sleep(ctx, time.Hour)
	fast := skein.Go(ctx, func(ctx *skein.Context) (string, error) {
		return skein.Step(ctx, "fast", func(s *skein.StepContext) (string, error) {
			s.Sleep(10 * time.Millisecond)
			return "fast@" + i.Tag, nil
		})
	})
	n, err := skein.Select(ctx, timer, fast)
	if err != nil {
		return nil, err
	}
	won := "timer"
	if n == 1 {
		if won, err = fast.Get(ctx); err != nil {
			return nil, err
		}
	}
	after, err := step(ctx, "after", i.Tag)
	return []string{won, after}, err
}

// wait: w1 (1), then a promise (2) nobody settles: the run suspends.
func wait(ctx *skein.Context, i in) (string, error) {
	if _, err := step(ctx, "w1", i.Tag); err != nil {
		return "", err
	}
	return skein.Promise[string](ctx).Get(ctx)
}

// async: a timer (1, or "nap" when named) the task does not wait for at
// once, a step (2, or "x") that settles before it, then the wait and a
// step (3, or "y"): the step after the timer in program order settled
// first.
func async(ctx *skein.Context, i in) ([]string, error) {
	var opts [3][]skein.Option
	if i.Tag == "named" {
		opts = [3][]skein.Option{{skein.ID("nap")}, {skein.ID("x")}, {skein.ID("y")}}
	}
	timer := skein.Sleep(ctx, 10*time.Millisecond, opts[0]...)
	x, err := skein.Step(ctx, "x", func(*skein.StepContext) (string, error) { return "x@" + i.Tag, nil }, opts[1]...)
	if err != nil {
		return nil, err
	}
	if _, err := timer.Get(ctx); err != nil {
		return nil, err
	}
	y, err := skein.Step(ctx, "y", func(*skein.StepContext) (string, error) { return "y@" + i.Tag, nil }, opts[2]...)
	return []string{x, y}, err
}

// slow: w1 (1), then a step (2) whose body sleeps for the tag (a Go
// duration): the run is live, at an idle point, while it sleeps.
func slow(ctx *skein.Context, i in) (string, error) {
	if _, err := step(ctx, "w1", i.Tag); err != nil {
		return "", err
	}
	d, err := time.ParseDuration(i.Tag)
	if err != nil {
		return "", err
	}
	return skein.Step(ctx, "nap", func(s *skein.StepContext) (string, error) {
		s.Sleep(d)
		return "slept", nil
	})
}

func main() {
	skein.Register("async", async)
	skein.Register("slow", slow)
	skein.Register("seq", seq)
	skein.Register("spawn", spawn)
	skein.Register("fanout", fanout)
	skein.Register("parent", parent)
	skein.Register("leaf", leaf)
	skein.Register("race", race)
	skein.Register("wait", wait)
	skein.Main()
}
