// Command sequence runs N sequential steps, keyed 1..N: sequential code
// keeps the flat ids it always had.
package main

import (
	"github.com/skeinrun/skein/guest-sdk/skein"
)

type input struct {
	N int `json:"n"`
}

func sequence(ctx *skein.Context, in input) (int, error) {
	sum := 0
	for i := 1; i <= in.N; i++ {
		v, err := skein.Step(ctx, "add", func(*skein.StepContext) (int, error) { return i, nil })
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

func main() {
	skein.Register("sequence", sequence)
	skein.Main()
}
