// Command order is a workflow module for `skein serve`: it places an
// order by calling activities that a worker process serves
// (examples/order/worker): it reserves stock, charges the card with a
// retry policy, and when the charge fails for good it releases the
// reservation (a compensation). Each call is recorded: a crash or a
// replay never reserves or charges twice. When the order names a
// webhook, it tells it the outcome with skein.HTTP: the host makes the
// request under its egress policy (skein serve --allow-http).
package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// Order is the run's input.
type Order struct {
	ID   string `json:"id"`
	Item string `json:"item"`
	Qty  int    `json:"qty"`
	// Card "declined" is refused on every attempt; "flaky" fails the
	// first attempt and succeeds on the next.
	Card string `json:"card"`
	// Notify, if set, is the URL the outcome is posted to.
	Notify string `json:"notify,omitempty"`
}

// Reservation is what reserve-stock returns.
type Reservation struct {
	ID   string `json:"id"`
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

// Receipt is what charge returns.
type Receipt struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// Placed is the run's result.
type Placed struct {
	Order       string `json:"order"`
	Reservation string `json:"reservation"`
	Receipt     string `json:"receipt"`
}

func placeOrder(ctx *skein.Context, o Order) (Placed, error) {
	placed, err := place(ctx, o)
	status := "placed"
	if err != nil {
		status = "canceled"
	}
	if nerr := notify(ctx, o, status); nerr != nil && err == nil {
		err = nerr
	}
	return placed, err
}

func place(ctx *skein.Context, o Order) (Placed, error) {
	res, err := skein.Call[Reservation](ctx, "reserve-stock", o).Get(ctx)
	if err != nil {
		return Placed{}, fmt.Errorf("reserve stock: %w", err)
	}
	retry := skein.Retry(skein.RetryPolicy{MaxAttempts: 3, InitialBackoff: 50 * time.Millisecond, NonRetryable: []string{"declined"}})
	rcpt, err := skein.Call[Receipt](ctx, "charge", o, retry).Get(ctx)
	if err != nil {
		// Compensate: give the stock back, then fail the order.
		if _, cerr := skein.Call[Reservation](ctx, "release-stock", res).Get(ctx); cerr != nil {
			return Placed{}, fmt.Errorf("charge failed (%v), and releasing reservation %s failed: %w", err, res.ID, cerr)
		}
		return Placed{}, fmt.Errorf("charge failed: %v; reservation %s released", err, res.ID)
	}
	return Placed{Order: o.ID, Reservation: res.ID, Receipt: rcpt.ID}, nil
}

// notify posts the order's outcome to o.Notify, if set; a webhook that
// answers with an error status fails the order's run.
func notify(ctx *skein.Context, o Order, status string) error {
	if o.Notify == "" {
		return nil
	}
	body, _ := json.Marshal(map[string]string{"order": o.ID, "status": status})
	resp, err := skein.HTTP(ctx, skein.HTTPRequest{Method: "POST", URL: o.Notify,
		Header: map[string]string{"Content-Type": "application/json"}, Body: body},
		skein.Retry(skein.RetryPolicy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond})).Get(ctx)
	if err != nil {
		return fmt.Errorf("notify %s: %w", o.Notify, err)
	}
	if resp.Status >= 300 {
		return fmt.Errorf("notify %s: HTTP %d: %s", o.Notify, resp.Status, resp.Body)
	}
	return nil
}

func main() {
	skein.Register("order", placeOrder)
	skein.Main()
}
