// Command remote calls activities that a remote worker serves
// (testdata/taskworker): the tests of the worker protocol run it.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// Calls says what to call: N calls of activity Name with inputs 0..N-1,
// one after another, or all at once when Parallel.
type Calls struct {
	N        int    `json:"n"`
	Name     string `json:"name"`
	Parallel bool   `json:"parallel"`
	// Attempts, when set, retries each call up to this many attempts.
	Attempts int `json:"attempts"`
}

func calls(ctx *skein.Context, in Calls) (int, error) {
	var opts []skein.Option
	if in.Attempts > 0 {
		opts = append(opts, skein.Retry(skein.RetryPolicy{MaxAttempts: in.Attempts, InitialBackoff: 10 * time.Millisecond}))
	}
	sum := 0
	if !in.Parallel {
		for i := range in.N {
			v, err := skein.Call[int](ctx, in.Name, i, opts...).Get(ctx)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	}
	fs := make([]skein.Future[int], in.N)
	for i := range fs {
		fs[i] = skein.Call[int](ctx, in.Name, i, opts...)
	}
	for _, f := range fs {
		v, err := f.Get(ctx)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

func main() {
	skein.Register("calls", calls)
	skein.Main()
}
