// Command noisy holds workflows whose outcomes, result and error carry a
// text chosen by their input, so the tests of the skein CLI can check
// that terminal control characters in what a run recorded reach an
// operator's terminal escaped (cmd/skein/escape_test.go).
package main

import (
	"errors"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// fails records the text as a step's value, then fails with an error
// that holds it.
func fails(ctx *skein.Context, text string) (string, error) {
	v, err := skein.Step(ctx, "say", func(*skein.StepContext) (string, error) { return text, nil })
	if err != nil {
		return "", err
	}
	return "", errors.New("the workflow says: " + v)
}

// echoes records the text as a step's value and returns it.
func echoes(ctx *skein.Context, text string) (string, error) {
	return skein.Step(ctx, "say", func(*skein.StepContext) (string, error) { return text, nil })
}

func main() {
	skein.Register("fails", fails)
	skein.Register("echoes", echoes)
	skein.Main()
}
