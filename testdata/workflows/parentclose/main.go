// Command parentclose is a parent whose Select a timer wins over a slow
// child run: the parent ends while its child still runs, and the child's
// ParentClose policy decides what that end does to it (host and
// cmd/skein tests).
package main

import (
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type parentIn struct {
	// Policy is "cancel" (skein.CancelChild), "abandon" or "" (the
	// default, cancel).
	Policy string `json:"policy"`
	// Timer and Child are the parent's timer and the child's sleep, as
	// Go durations (defaults 100ms and 3s).
	Timer string `json:"timer"`
	Child string `json:"child"`
	// Waiter: the child is "waiter", which waits on a promise nobody
	// settles, instead of "slow".
	Waiter bool `json:"waiter"`
}

func duration(s, def string) (time.Duration, error) {
	if s == "" {
		s = def
	}
	return time.ParseDuration(s)
}

func parent(ctx *skein.Context, in parentIn) (string, error) {
	timer, err := duration(in.Timer, "100ms")
	if err != nil {
		return "", err
	}
	var opts []skein.Option
	switch in.Policy {
	case "cancel":
		opts = append(opts, skein.ParentClose(skein.CancelChild))
	case "abandon":
		opts = append(opts, skein.ParentClose(skein.AbandonChild))
	case "":
	default:
		return "", fmt.Errorf("policy %q: want cancel, abandon or empty", in.Policy)
	}
	workflow := "slow"
	if in.Waiter {
		workflow = "waiter"
	}
	child := skein.Child[string](ctx, workflow, in.Child, opts...)
	i, err := skein.Select(ctx, skein.Sleep(ctx, timer), child)
	if err != nil {
		return "", err
	}
	if i == 1 {
		return child.Get(ctx)
	}
	return "the timer won", nil
}

// slow sleeps (a durable timer), then records a step: a cancellation
// fails the sleep, and the child ends canceled.
func slow(ctx *skein.Context, d string) (string, error) {
	sleep, err := duration(d, "3s")
	if err != nil {
		return "", err
	}
	if _, err := skein.Sleep(ctx, sleep).Get(ctx); err != nil {
		return "", err
	}
	return skein.Step(ctx, "done", func(*skein.StepContext) (string, error) { return "slept " + sleep.String(), nil })
}

// waiter waits on a promise ("decision") that nobody settles: it
// suspends until its cancellation.
func waiter(ctx *skein.Context, _ string) (string, error) {
	return skein.Promise[string](ctx, skein.ID("decision")).Get(ctx)
}

func main() {
	skein.Register("parent", parent)
	skein.Register("slow", slow)
	skein.Register("waiter", waiter)
	skein.Main()
}
