// Command v2 is version 2 of the refund workflow (see ../v1): a refund up
// to 100 is approved by the workflow itself; a larger one still waits for
// a person (the promise {run}.approve). Its steps keep their names, so a
// run of version 1 resumed with version 2 keeps its recorded check.
package main

import (
	"fmt"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// request is the workflow's input.
type request struct {
	Amount int `json:"amount"`
}

// approval is the value the promise "approve" is settled with.
type approval struct {
	By string `json:"by"`
}

// autoLimit is the largest refund version 2 approves itself.
const autoLimit = 100

func refund(ctx *skein.Context, in request) (string, error) {
	checked, err := skein.Step(ctx, "check", func(*skein.StepContext) (string, error) {
		if in.Amount <= 0 {
			return "", skein.NonRetryable(fmt.Errorf("amount %d: want more than 0", in.Amount))
		}
		return fmt.Sprintf("refund of %d checked", in.Amount), nil
	}, skein.ID("check"))
	if err != nil {
		return "", err
	}
	by := "policy"
	if in.Amount > autoLimit {
		a, err := skein.Promise[approval](ctx, skein.ID("approve")).Get(ctx)
		if err != nil {
			return "", err
		}
		by = a.By
	}
	return skein.Step(ctx, "pay", func(*skein.StepContext) (string, error) {
		return checked + ", approved by " + by + ", paid", nil
	}, skein.ID("pay"))
}

func main() {
	skein.Register("refund", refund)
	skein.Main()
}
