// Command retry charges a card through a payment gateway that is busy
// twice: the step fails on its first two attempts and succeeds on the
// third, and it sends every retry to the backup endpoint. Both choices
// read skein.StepContext.Attempt, the durable attempt number the host
// records before each attempt runs, so they are the same live, after any
// replay and after a crash. (A counter in workflow or package state would
// start again at every replay: skein check reports it.)
package main

import (
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type input struct {
	Card string `json:"card"`
	// Busy is how many attempts the gateway turns away (default 2).
	Busy int `json:"busy"`
}

func charge(ctx *skein.Context, in input) (string, error) {
	busy := in.Busy
	if busy == 0 {
		busy = 2
	}
	return skein.Step(ctx, "charge-card", func(sc *skein.StepContext) (string, error) {
		endpoint := "primary"
		if sc.Attempt() > 1 {
			endpoint = "backup"
		}
		fmt.Printf("charge-card: attempt %d via %s\n", sc.Attempt(), endpoint) // guest output, not recorded
		if sc.Attempt() <= busy {
			return "", fmt.Errorf("gateway busy (attempt %d, %s)", sc.Attempt(), endpoint)
		}
		// The value does not name the attempt: a crash during an attempt
		// uses it up, and the next one must record the same value.
		return fmt.Sprintf("charged %s via %s", in.Card, endpoint), nil
	}, skein.Retry(skein.RetryPolicy{MaxAttempts: 5, InitialBackoff: 10 * time.Millisecond}))
}

func main() {
	skein.Register("charge", charge)
	skein.Main()
}
