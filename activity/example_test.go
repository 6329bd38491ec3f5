package activity_test

import (
	"context"
	"fmt"

	"github.com/skeinrun/skein/activity"
)

// Typed turns a function with Go types into a Func: JSON in, JSON out.
func ExampleTyped() {
	type order struct {
		Item string `json:"item"`
		Qty  int    `json:"qty"`
	}
	type receipt struct {
		Total int `json:"total"`
	}
	price := activity.Typed(func(ctx context.Context, o order) (receipt, error) {
		if o.Qty <= 0 {
			return receipt{}, activity.NonRetryable(fmt.Errorf("quantity %d", o.Qty))
		}
		return receipt{Total: 3 * o.Qty}, nil
	})
	// A workflow would call it with skein.Call[receipt](ctx, "price", order{…});
	// here it is called directly.
	out, err := price(context.Background(), []byte(`{"item":"apple","qty":4}`))
	fmt.Println(string(out), err)
	_, err = price(context.Background(), []byte(`{"item":"apple","qty":0}`))
	fmt.Println(err)
	// Output:
	// {"total":12} <nil>
	// quantity 0
}
