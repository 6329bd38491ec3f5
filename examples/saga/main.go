// Command saga books a trip in three steps: reserve a flight, reserve a
// hotel, charge the card. The charge is retried (a durable retry policy),
// and when it still fails the completed steps are compensated in reverse
// order: cancel the hotel, then the flight.
package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type input struct {
	Trip string `json:"trip"`
	// Card "declined" fails the charge on every attempt; any other card
	// succeeds.
	Card string `json:"card"`
}

type step struct {
	name, undo string
	do         func(*skein.StepContext) (string, error)
	opts       []skein.Option
}

func saga(ctx *skein.Context, in input) (string, error) {
	steps := []step{
		{name: "reserve-flight", undo: "cancel-flight", do: func(*skein.StepContext) (string, error) {
			return "flight for " + in.Trip, nil
		}},
		{name: "reserve-hotel", undo: "cancel-hotel", do: func(*skein.StepContext) (string, error) {
			return "hotel for " + in.Trip, nil
		}},
		{name: "charge-card", do: func(*skein.StepContext) (string, error) {
			if in.Card == "declined" {
				return "", errors.New("card declined")
			}
			return "charged " + in.Card, nil
		}, opts: []skein.Option{skein.Retry(skein.RetryPolicy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond})}},
	}
	var done []step
	var booked []string
	for _, s := range steps {
		v, err := skein.Step(ctx, s.name, s.do, s.opts...)
		if err != nil {
			// Compensate what was done, newest first.
			var undone []string
			for i := len(done) - 1; i >= 0; i-- {
				u := done[i]
				r, cerr := skein.Step(ctx, u.undo, func(*skein.StepContext) (string, error) {
					return "undid " + u.name, nil
				})
				if cerr != nil {
					return "", fmt.Errorf("%s failed (%v), and compensating %s failed: %w", s.name, err, u.name, cerr)
				}
				undone = append(undone, r)
			}
			return "", fmt.Errorf("%s failed: %v; compensated: %s", s.name, err, strings.Join(undone, ", "))
		}
		done = append(done, s)
		booked = append(booked, v)
	}
	return strings.Join(booked, "; "), nil
}

func main() {
	skein.Register("saga", saga)
	skein.Main()
}
