// Command v2 is version 2 of the jackpot workflow (see ../v1): the same
// draws before and after the promise "{run}.go", then Payout more draws,
// and it returns all the draws. A run version 1 failed is resumed with it.
package main

import (
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// jackpotIn is the input: Before draws, the promise "go", After draws,
// then Payout draws, each body taking MS of real time.
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

// jackpot makes the draws before and after the promise "go", then the
// payout's draws, and returns them all.
func jackpot(ctx *skein.Context, in jackpotIn) ([]string, error) {
	var out []string
	for i := 1; i <= in.Before+in.After+in.Payout; i++ {
		if i == in.Before+1 {
			if _, err := skein.Promise[string](ctx, skein.ID("go")).Get(ctx); err != nil {
				return nil, err
			}
		}
		v, err := draw(ctx, i, in.MS)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func main() {
	skein.Register("jackpot", jackpot)
	skein.Main()
}
