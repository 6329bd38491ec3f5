// Command v2 is testdata/workflows/reset's seq on changed code: steps a
// and b as before, then c and d return "v2:" and their name.
package main

import "github.com/skeinrun/skein/guest-sdk/skein"

type in struct {
	Tag string `json:"tag"`
}

func seq(ctx *skein.Context, i in) ([]string, error) {
	var out []string
	for _, n := range []string{"a", "b", "c", "d"} {
		v, err := skein.Step(ctx, n, func(*skein.StepContext) (string, error) {
			if n == "c" || n == "d" {
				return "v2:" + n + "@" + i.Tag, nil
			}
			return n + "@" + i.Tag, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func main() {
	skein.Register("seq", seq)
	skein.Main()
}
