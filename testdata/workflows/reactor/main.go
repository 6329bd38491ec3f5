// Command reactor is a workflow module whose package initialisation and
// main each print a line, so that a test can see whether an instance ran
// the module's start-up or started from its snapshot.
package main

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// started is the virtual time at which the package was initialised, and
// mainAt the time at which main registered the workflows.
var started, mainAt = time.Now(), time.Time{}

func init() { fmt.Println("package initialised") }

// twice: a step, a durable sleep (the run is evicted and replayed from
// the top), and a second step; it returns when the package was
// initialised, what the steps returned, and when main ran.
func twice(ctx *skein.Context, _ struct{}) ([]string, error) {
	a, err := skein.Step(ctx, "a", func(*skein.StepContext) (string, error) { return "a", nil })
	if err != nil {
		return nil, err
	}
	if _, err := skein.Sleep(ctx, time.Millisecond).Get(ctx); err != nil {
		return nil, err
	}
	b, err := skein.Step(ctx, "b", func(*skein.StepContext) (string, error) { return "b", nil })
	if err != nil {
		return nil, err
	}
	return []string{started.UTC().Format(time.RFC3339), a, b, mainAt.UTC().Format(time.RFC3339)}, nil
}

// Package state a run changes: a run that sees another run's changes
// started on an instance that was not reset.
var (
	calls int
	seen  = map[int]bool{}
	kept  []byte
)

// state changes package state (a counter, a map, a slice that grows the
// heap by kb KiB), draws from math/rand, durably sleeps when asked (the
// run is dropped and replayed), and returns what it saw before changing
// anything.
func state(ctx *skein.Context, in struct{ KB, Sleep int }) ([]int, error) {
	before := []int{calls, len(seen), len(kept), rand.Intn(1 << 30)}
	calls++
	seen[calls] = true
	kept = append(kept, make([]byte, in.KB<<10)...)
	if in.Sleep > 0 {
		if _, err := skein.Sleep(ctx, time.Duration(in.Sleep)*time.Millisecond).Get(ctx); err != nil {
			return nil, err
		}
	}
	return before, nil
}

func main() {
	mainAt = time.Now()
	fmt.Println("main ran")
	skein.Register("twice", twice)
	skein.Register("state", state)
	skein.Main()
}
