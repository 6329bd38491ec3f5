// Command torture is the workflow of the crash-torture test
// (cmd/skein/torture_test.go): a chain of N host activity calls
// ("append", which has an effect outside the host), each followed by a
// guest step.
package main

import (
	"fmt"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type chainIn struct {
	ID string `json:"id"`
	N  int    `json:"n"`
}

// chain returns the sum over i of (i*i + len(id)) * 3.
func chain(ctx *skein.Context, in chainIn) (int, error) {
	sum := 0
	for i := 0; i < in.N; i++ {
		v, err := skein.Call[int](ctx, "append", map[string]any{"id": in.ID, "i": i}, skein.ID(fmt.Sprintf("append-%d", i))).Get(ctx)
		if err != nil {
			return 0, err
		}
		w, err := skein.Step(ctx, "triple", func(*skein.StepContext) (int, error) { return 3 * v, nil }, skein.ID(fmt.Sprintf("triple-%d", i)))
		if err != nil {
			return 0, err
		}
		sum += w
	}
	return sum, nil
}

func main() {
	skein.Register("chain", chain)
	skein.Main()
}
