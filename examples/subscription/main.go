// Command subscription bills a customer every month, for as long as the
// subscription lasts: a loop with a durable sleep between charges that
// never ends by itself. Its journal would grow by two records a month
// forever, so every 12 cycles it continues as new (skein.ContinueAsNew):
// the run ends as continued and a successor starts with the state it
// carries in its input, with an empty journal. A chain of runs
// "sub-42", "sub-42~2", "sub-42~3", … bills year after year, and no run's
// journal holds more than 24 records.
//
//	skein run examples/subscription.wasm subscription '{"customer":"c-42","plan_cents":1200,"cycles":40}'
package main

import (
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// Month is the billing period: a durable timer of 30 days in virtual
// time (no real time passes under `skein check`).
const Month = 30 * 24 * time.Hour

// CyclesPerRun is how many months one run bills before it continues as new.
const CyclesPerRun = 12

// State is what the subscription carries from run to run.
type State struct {
	Customer  string `json:"customer"`
	PlanCents int    `json:"plan_cents"`
	// Cycles ends the subscription after that many charges (0: never).
	Cycles int `json:"cycles,omitempty"`
	// Cycle counts the charges made, over the whole chain.
	Cycle int `json:"cycle"`
	// BilledCents is the sum of the charges made.
	BilledCents int `json:"billed_cents"`
	// LastInvoice is the id of the last charge.
	LastInvoice string `json:"last_invoice,omitempty"`
}

// invoice is the record of one charge.
type invoice struct {
	ID    string `json:"id"`
	Cents int    `json:"cents"`
}

// subscription bills one month per cycle and continues as new every
// CyclesPerRun cycles; it completes after Cycles charges.
func subscription(ctx *skein.Context, st State) (State, error) {
	if st.Customer == "" || st.PlanCents <= 0 {
		return st, fmt.Errorf("subscription: need a customer and a positive plan_cents, got %q and %d", st.Customer, st.PlanCents)
	}
	for range CyclesPerRun {
		if st.Cycles > 0 && st.Cycle >= st.Cycles {
			return st, nil
		}
		if _, err := skein.Sleep(ctx, Month).Get(ctx); err != nil {
			return st, fmt.Errorf("subscription: wait for cycle %d: %w", st.Cycle+1, err)
		}
		inv, err := skein.Step(ctx, "charge", func(*skein.StepContext) (invoice, error) {
			// A real module charges here, with an activity call
			// (skein.Call) keyed by customer and cycle.
			return invoice{ID: fmt.Sprintf("%s-%d", st.Customer, st.Cycle+1), Cents: st.PlanCents}, nil
		})
		if err != nil {
			return st, fmt.Errorf("subscription: charge cycle %d: %w", st.Cycle+1, err)
		}
		st.Cycle++
		st.BilledCents += inv.Cents
		st.LastInvoice = inv.ID
	}
	if st.Cycles > 0 && st.Cycle >= st.Cycles {
		return st, nil
	}
	return st, skein.ContinueAsNew(ctx, st)
}

func main() {
	skein.Register("subscription", subscription)
	skein.Main()
}
