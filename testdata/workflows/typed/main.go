// Command typed holds the workflows of the typed-value tests of `skein
// serve` (cmd/skein/typed_exact_test.go): promises and inputs whose Go
// types refuse values of another shape, width or spelling. Each returns
// what it decoded, so a test sees what the guest made of a value.
package main

import (
	"fmt"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// decision is a promise's value and an input: two fields, as
// examples/approval has.
type decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

// count is a promise's value and an input: one int field.
type count struct {
	N int `json:"n"`
}

// awaited awaits the promise "{run}.p" of type T and prints its value.
func awaited[T any](ctx *skein.Context, _ struct{}) (string, error) {
	v, err := skein.Promise[T](ctx, skein.ID("p")).Get(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%+v", v), nil
}

// given prints its input.
func given[T any](_ *skein.Context, in T) (string, error) { return fmt.Sprintf("%+v", in), nil }

func main() {
	skein.Register("promiseInt", awaited[int])
	skein.Register("promiseCount", awaited[count])
	skein.Register("promiseDecision", awaited[decision])
	skein.Register("inputInt", given[int])
	skein.Register("inputCount", given[count])
	skein.Register("inputDecision", given[decision])
	skein.Main()
}
