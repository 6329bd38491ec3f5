// Command attrs is a workflow module that records search attributes on
// its run (skein.SetAttributes): the ticket's customer and region when
// it starts, and its stage, priority and close time when it is done, so
// that an operator finds the runs of customer 42 with
// `GET /v1/runs?attr.customer=42`. The attributes must be declared on
// the server first (skein attribute create customer --type int ...;
// docs/operations.md, "Search attributes"). An attribute the server
// does not declare fails its op with an error the workflow handles: the
// run goes on and reports it.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// Ticket is the run's input.
type Ticket struct {
	Customer int64   `json:"customer"`
	Region   string  `json:"region"`
	Priority float64 `json:"priority"`
	// Extra, if set, names one more attribute to set to "x": one the
	// server does not declare, or declares with another type, shows the
	// op's error.
	Extra string `json:"extra,omitempty"`
	// Hold is how long the ticket waits before it closes (a Go
	// duration); default 1ms.
	Hold string `json:"hold,omitempty"`
}

// Closed is the run's result.
type Closed struct {
	Stage string `json:"stage"`
	// ExtraError is the error of setting Extra, if any.
	ExtraError string `json:"extra_error,omitempty"`
}

func ticket(ctx *skein.Context, t Ticket) (Closed, error) {
	if err := skein.SetAttributes(ctx, map[string]any{"customer": t.Customer, "region": t.Region}); err != nil {
		return Closed{}, err
	}
	// A durable timer: the run may be evicted and replayed here, and the
	// replay sets nothing again.
	hold := time.Millisecond
	if t.Hold != "" {
		d, err := time.ParseDuration(t.Hold)
		if err != nil {
			return Closed{}, err
		}
		hold = d
	}
	if _, err := skein.Sleep(ctx, hold).Get(ctx); err != nil {
		return Closed{}, err
	}
	var c Closed
	if t.Extra != "" {
		if err := skein.SetAttributes(ctx, map[string]any{t.Extra: "x"}); err != nil {
			c.ExtraError = err.Error()
		}
	}
	c.Stage = "done"
	err := skein.SetAttributes(ctx, map[string]any{"stage": c.Stage, "priority": t.Priority, "closed": true, "closed_at": time.Now()})
	return c, err
}

func main() {
	skein.Register("ticket", ticket)
	skein.Main()
}
