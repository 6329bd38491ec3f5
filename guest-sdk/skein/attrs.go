package skein

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skeinrun/skein/abi"
)

// SetAttributes records search attributes on the run: values by name,
// each of the type its attribute was declared with (skein attribute
// create): a string; an int (any Go integer); a float (any number); a
// bool; a time (time.Time). It is a durable op: on replay the recorded
// op answers and nothing is written again, and a replay that sets other
// values diverges at its key. A later value of a name replaces an
// earlier one. An undeclared name or a value of the wrong type fails
// the op with an error naming the attribute, which the workflow may
// handle; the run goes on. Operators filter runs by these values
// (docs/operations.md, "Search attributes").
func SetAttributes(ctx *Context, attrs map[string]any, opts ...Option) error {
	o := collect(opts)
	arg, err := json.Marshal(attrs)
	if err != nil {
		return fmt.Errorf("skein: SetAttributes: %w", err)
	}
	if attrs == nil {
		arg = []byte("{}")
	}
	r := ctx.op(abi.OpAttrs, o, "attrs", arg)
	switch r.State {
	case abi.StateIDError:
		return idError(r)
	case abi.StateSettled:
		if r.Outcome.Status != abi.StatusOK {
			return errors.New(string(r.Outcome.Data))
		}
		return nil
	}
	_, err = decode[struct{}](ctx.t.await(r.Promise))
	return err
}
