// Command server holds the workflows the tests of `skein serve` run
// through the HTTP API: timers, external promises, a step that runs long
// enough for a restart to hit it, and child workflows.
package main

import (
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// durationIn is the input of sleeper and busy.
type durationIn struct {
	MS int `json:"ms"`
}

// sleeper waits ms of virtual time on a durable timer, then runs a step.
func sleeper(ctx *skein.Context, in durationIn) (string, error) {
	if _, err := skein.Sleep(ctx, time.Duration(in.MS)*time.Millisecond).Get(ctx); err != nil {
		return "", err
	}
	return skein.Step(ctx, "after-sleep", func(*skein.StepContext) (string, error) {
		return fmt.Sprintf("slept %dms", in.MS), nil
	})
}

// waiter awaits the external promise "{run}.approve", then records the
// answer in a step.
func waiter(ctx *skein.Context, _ struct{}) (string, error) {
	v, err := skein.Promise[string](ctx, skein.ID("approve")).Get(ctx)
	if err != nil {
		return "", err
	}
	return skein.Step(ctx, "approved", func(*skein.StepContext) (string, error) {
		return "approved: " + v, nil
	})
}

// busy runs a step whose body takes ms of real time.
func busy(ctx *skein.Context, in durationIn) (string, error) {
	return skein.Step(ctx, "work", func(s *skein.StepContext) (string, error) {
		s.Sleep(time.Duration(in.MS) * time.Millisecond)
		return fmt.Sprintf("worked %dms", in.MS), nil
	})
}

// chainIn is the input of chain.
type chainIn struct {
	N  int `json:"n"`
	MS int `json:"ms"`
}

// chain runs n steps one after the other, each body taking ms of real
// time, and returns 1+2+...+n: a run long enough to be mid-way when its
// worker dies.
func chain(ctx *skein.Context, in chainIn) (int, error) {
	sum := 0
	for i := 1; i <= in.N; i++ {
		v, err := skein.Step(ctx, "link", func(s *skein.StepContext) (int, error) {
			s.Sleep(time.Duration(in.MS) * time.Millisecond)
			return i, nil
		})
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// parent runs child(n) as a child workflow and adds one.
func parent(ctx *skein.Context, n int) (int, error) {
	v, err := skein.Child[int](ctx, "child", n).Get(ctx)
	if err != nil {
		return 0, err
	}
	return v + 1, nil
}

// child squares n in a step.
func child(ctx *skein.Context, n int) (int, error) {
	return skein.Step(ctx, "square", func(*skein.StepContext) (int, error) { return n * n, nil })
}

// echo returns its input, through a step.
func echo(ctx *skein.Context, in any) (any, error) {
	return skein.Step(ctx, "echo", func(*skein.StepContext) (any, error) { return in, nil })
}

func main() {
	skein.Register("sleeper", sleeper)
	skein.Register("waiter", waiter)
	skein.Register("busy", busy)
	skein.Register("chain", chain)
	skein.Register("parent", parent)
	skein.Register("child", child)
	skein.Register("echo", echo)
	skein.Main()
}
