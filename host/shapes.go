package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinrun/skein/internal/shape"
	"github.com/skeinrun/skein/store"
)

// Typed promises and inputs: the guest gives the JSON Schema (package
// shape) of each workflow's input (FnInputSchema, at deploy) and of each
// promise's value (the promise op's argument); Start and Resolve refuse a
// value without that shape, before anything is stored.

// ShapeError reports a run input or a promise value that does not have
// the shape the workflow expects. Nothing was stored: no run was created,
// the promise is still pending. It matches ErrInvalid with errors.Is.
type ShapeError struct {
	What     string // `the input of workflow "order"`, or "the value" (of a promise)
	Mismatch string // where and how the value differs, e.g. `at $.qty: want integer or null, got string "3"`
	Schema   []byte // the expected shape (a JSON Schema)
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("%s does not have the expected shape: %s; expected shape (JSON Schema): %s", e.What, e.Mismatch, e.Schema)
}

// Unwrap makes a ShapeError match ErrInvalid.
func (e *ShapeError) Unwrap() error { return ErrInvalid }

// checkShape checks value against schema (none: no check) for what.
func checkShape(what string, schema, value []byte) error {
	if len(schema) == 0 {
		return nil
	}
	// Any other error is a schema that does not parse (the module's
	// doing): then there is no check, as without a schema.
	var mm *shape.MismatchError
	if errors.As(shape.Check(schema, value), &mm) {
		return &ShapeError{What: what, Mismatch: mm.Error(), Schema: schema}
	}
	return nil
}

// checkInput checks a run's input against the input schema its module
// announced for the workflow.
func checkInput(m store.Module, workflow string, input []byte) error {
	return checkShape(fmt.Sprintf("the input of workflow %q", workflow), m.InputSchemas[workflow], input)
}

// checkSettlement checks a promise's value against the schema recorded
// with the promise (none for a promise issued by a module built with an
// SDK that gives none, or one not yet issued).
func (h *Host) checkSettlement(ctx context.Context, runID, key string, value []byte) error {
	o, err := h.cfg.Store.Outcome(ctx, runID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the promise's schema: %w", err)
	}
	if o.Status != store.OutcomePending {
		return nil
	}
	return checkShape("the value", o.Schema, value)
}
