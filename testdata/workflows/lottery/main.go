// Command lottery is the workflow of the tests that drive one run from
// two processes at once (cmd/skein/lease_test.go): a chain of steps whose
// bodies take real time and return real randomness, so that two
// executions of one body record different values, and that print one
// line per body execution ("lottery-body {i} {value}") for the test to
// count.
package main

import (
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// lotteryIn is the input: n draws, each body taking ms of real time.
type lotteryIn struct {
	N  int `json:"n"`
	MS int `json:"ms"`
}

// lottery draws n random numbers, one per step, and returns them.
func lottery(ctx *skein.Context, in lotteryIn) ([]string, error) {
	var out []string
	for i := 1; i <= in.N; i++ {
		v, err := skein.Step(ctx, "draw", func(s *skein.StepContext) (string, error) {
			s.Sleep(time.Duration(in.MS) * time.Millisecond)
			v := fmt.Sprintf("%016x", s.Rand().Uint64())
			fmt.Printf("lottery-body %d %s\n", i, v)
			return v, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func main() {
	skein.Register("lottery", lottery)
	skein.Main()
}
