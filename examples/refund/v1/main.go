// Command v1 is version 1 of the refund workflow, docs/workflows.md's example of
// `skein resume`: it checks a refund, then waits for a person to approve
// it (the external promise {run}.approve) before it pays. Version 2
// (../v2) approves small refunds itself, so a run of version 1 that waits
// for a person is resumed with version 2 and completes.
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
	a, err := skein.Promise[approval](ctx, skein.ID("approve")).Get(ctx)
	if err != nil {
		return "", err
	}
	return skein.Step(ctx, "pay", func(*skein.StepContext) (string, error) {
		return checked + ", approved by " + a.By + ", paid", nil
	}, skein.ID("pay"))
}

func main() {
	skein.Register("refund", refund)
	skein.Main()
}
