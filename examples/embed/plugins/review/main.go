// Command review is a plugin of examples/embed: it counts the words of a
// document with the host activity "wordcount", then waits for a reviewer's
// verdict, an external promise that the embedding program settles by its
// full id "{run}.verdict".
package main

import (
	"fmt"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type input struct {
	Doc string `json:"doc"`
}

func review(ctx *skein.Context, in input) (string, error) {
	words, err := skein.Call[int](ctx, "wordcount", in.Doc).Get(ctx)
	if err != nil {
		return "", err
	}
	verdict, err := skein.Promise[string](ctx, skein.ID("verdict")).Get(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d words, %s", words, verdict), nil
}

func main() {
	skein.Register("review", review)
	skein.Main()
}
