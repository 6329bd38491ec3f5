// Command approval waits for a human decision: an external promise that
// someone settles through the API or `skein resolve {run}.decision`, or a
// deadline timer (24 h by default), whichever settles first (Select). A
// canceled run withdraws its request before it ends.
package main

// The native build's host stubs (guest-sdk/skein/imports_other.go)
// panic, so there staticcheck takes Select's error for never nil.
//lint:file-ignore SA4023 wrong for the native build only

import (
	"errors"
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type input struct {
	Request string `json:"request"`
	Timeout string `json:"timeout"` // a Go duration; default 24h
}

// decision is the value the promise is settled with.
type decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

func approval(ctx *skein.Context, in input) (string, error) {
	timeout := 24 * time.Hour
	if in.Timeout != "" {
		d, err := time.ParseDuration(in.Timeout)
		if err != nil {
			return "", fmt.Errorf("input timeout: %w", err)
		}
		timeout = d
	}
	ticket, err := skein.Step(ctx, "submit", func(*skein.StepContext) (string, error) {
		return "ticket:" + in.Request, nil
	})
	if err != nil {
		return "", err
	}
	answer := skein.Promise[decision](ctx, skein.ID("decision"))
	deadline := skein.Sleep(ctx, timeout, skein.ID("deadline"))
	first, err := skein.Select(ctx, answer, deadline)
	if err != nil {
		return "", err
	}
	if first == 1 {
		return skein.Step(ctx, "expire", func(*skein.StepContext) (string, error) {
			return ticket + " expired after " + timeout.String(), nil
		})
	}
	d, err := answer.Get(ctx)
	if errors.Is(err, skein.ErrCanceled) {
		// Compensate: withdraw the request, then end canceled.
		if _, werr := skein.Step(ctx, "withdraw", func(*skein.StepContext) (string, error) {
			return ticket + " withdrawn", nil
		}); werr != nil {
			return "", werr
		}
		return "", err
	}
	if err != nil {
		return "", err
	}
	verdict := "rejected"
	if d.Approved {
		verdict = "approved"
	}
	return skein.Step(ctx, "notify", func(*skein.StepContext) (string, error) {
		return fmt.Sprintf("%s %s by %s", ticket, verdict, d.By), nil
	})
}

func main() {
	skein.Register("approval", approval)
	skein.Main()
}
