// Command badtext holds workflows that put text no store can hold into
// what crosses the ABI: a NUL byte or bytes that are not UTF-8 in a step's
// function name, a step's id, an activity's and a child workflow's name,
// a step's error, a panic and the workflow's own error. The host must
// refuse the names before anything is issued and record the error texts
// made valid, on every store (cmd/skein/badtext_test.go).
package main

import (
	"errors"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// in names the attack and the bad text: "nul" for a NUL byte, "utf8"
// for a byte that is not UTF-8.
type in struct {
	Attack string `json:"attack"`
	Text   string `json:"text"`
}

func bad(i in) string {
	if i.Text == "utf8" {
		return "\xff\xfe"
	}
	return "\x00"
}

func attack(ctx *skein.Context, i in) (string, error) {
	b := bad(i)
	switch i.Attack {
	case "function":
		return skein.Step(ctx, "comp"+b+"ute", func(*skein.StepContext) (string, error) { return "ran", nil })
	case "id":
		_, err := skein.Step(ctx, "compute", func(*skein.StepContext) (string, error) { return "ran", nil }, skein.ID("x"+b))
		return "", err
	case "step-error":
		_, err := skein.Step(ctx, "compute", func(*skein.StepContext) (string, error) {
			return "", skein.NonRetryable(errors.New("step" + b + "error"))
		})
		return "", err
	case "call":
		return skein.Call[string](ctx, "charge"+b, nil).Get(ctx)
	case "child":
		return skein.Child[string](ctx, "kid"+b, nil).Get(ctx)
	case "panic":
		panic("panic" + b + "text")
	case "error":
		return "", errors.New("workflow" + b + "error")
	}
	return "", errors.New("unknown attack " + i.Attack)
}

func main() {
	skein.Register("attack", attack)
	skein.Main()
}
