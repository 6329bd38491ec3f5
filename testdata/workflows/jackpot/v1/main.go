// Command v1 is version 1 of the jackpot workflow of the test of `skein
// resume` against a `skein serve` (cmd/skein/resume_lease_test.go): the
// lottery's draws (step bodies that take real time, return real
// randomness and print "lottery-body {i} {value}" per execution) before
// and after the external promise "{run}.go", and then it fails: version
// 1 cannot pay out. Version 2 (../v2) makes the same draws and then pays
// out, so a run failed by version 1 is resumed with version 2.
package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// jackpotIn is the input: Before draws, the promise "go", After draws
// (and in version 2 Payout draws), each body taking MS of real time.
type jackpotIn struct {
	Before int `json:"before"`
	After  int `json:"after"`
	Payout int `json:"payout"`
	MS     int `json:"ms"`
}

// draw records the body of draw i: ms of real time, then a random value.
func draw(ctx *skein.Context, i, ms int) (string, error) {
	return skein.Step(ctx, "draw", func(s *skein.StepContext) (string, error) {
		s.Sleep(time.Duration(ms) * time.Millisecond)
		v := fmt.Sprintf("%016x", s.Rand().Uint64())
		fmt.Printf("lottery-body %d %s\n", i, v)
		return v, nil
	})
}

// jackpot makes the draws before and after the promise "go", then fails.
func jackpot(ctx *skein.Context, in jackpotIn) ([]string, error) {
	for i := 1; i <= in.Before+in.After; i++ {
		if i == in.Before+1 {
			if _, err := skein.Promise[string](ctx, skein.ID("go")).Get(ctx); err != nil {
				return nil, err
			}
		}
		if _, err := draw(ctx, i, in.MS); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("jackpot v1 cannot pay out: resume the run with v2")
}

func main() {
	skein.Register("jackpot", jackpot)
	skein.Main()
}
