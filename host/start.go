package host

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// StartOptions describe a new run.
type StartOptions struct {
	Module   string          // module hash or name
	Workflow string          // registered workflow name
	Input    json.RawMessage // JSON; empty means null
	ID       string          // run id; generated if empty. Must not contain "." or whitespace.
	Seed     uint64          // WASI random seed; random if 0
	// Timeout, if set, cancels the run (reason "run timed out after …")
	// when it has not ended this long after Start.
	Timeout time.Duration
	// ClaimForDrive creates the run leased to this host (for
	// DefaultLeaseTTL), for a Drive of it by this host that follows at
	// once: that Drive claims nothing, which saves a store write before
	// the run's first op. No other worker takes the run until the Drive
	// ends or the lease expires. A run that existed already is not
	// claimed.
	ClaimForDrive bool
	// Traceparent, if set, is the W3C traceparent the run is started
	// under: its run span is a child of that span
	// (docs/observability.md). It is stored with the run.
	Traceparent string
	// Attributes are the run's initial search attributes, checked
	// against their declarations as skein.SetAttributes checks them
	// (store.TypedAttrs): an undeclared name or a wrong type is
	// ErrInvalid and no run is created. They are stored with the run.
	Attributes map[string]any

	reserved bool // the id may be in a reserved space (ReservedRunIDPrefixes): Trigger's
}

// ConflictError reports a start whose id names an existing run started
// with a different request.
type ConflictError struct{ RunID, Field string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("run %q exists with a different %s: a run id names one run for good; start a new run with another id (or none, for a generated one)", e.RunID, e.Field)
}

// Start creates a run (it does not execute it; see Drive). Starting the
// same id with the same request returns the existing run.
func (h *Host) Start(ctx context.Context, o StartOptions) (store.Run, error) {
	m, err := h.modules.Info(ctx, o.Module)
	if err != nil {
		return store.Run{}, fmt.Errorf("start: module %q: %w", o.Module, err)
	}
	if !slices.Contains(m.Workflows, o.Workflow) {
		return store.Run{}, invalidf("start: module %s has no workflow %q; it registers: %s", shortHash(m.Hash), o.Workflow, strings.Join(m.Workflows, ", "))
	}
	input, err := h.runInput(o.Input)
	if err != nil {
		return store.Run{}, fmt.Errorf("start: %w", err)
	}
	if err := checkInput(m, o.Workflow, input); err != nil {
		return store.Run{}, fmt.Errorf("start: %w", err)
	}
	if o.ID == "" {
		var b [8]byte
		rand.Read(b[:])
		o.ID = hex.EncodeToString(b[:])
	}
	if err := validRunID(o.ID, o.reserved); err != nil {
		return store.Run{}, invalidf("start: %w", err)
	}
	if o.Timeout < 0 {
		return store.Run{}, invalidf("start: timeout %s is negative", o.Timeout)
	}
	if err := checkTraceparent(o.Traceparent); err != nil {
		return store.Run{}, invalidf("start: %w", err)
	}
	attrs, err := h.startAttrs(ctx, o.Attributes)
	if err != nil {
		return store.Run{}, fmt.Errorf("start: %w", err)
	}
	r := store.Run{ID: o.ID, ModuleHash: m.Hash, Workflow: o.Workflow, Input: input, Seed: o.Seed, TraceParent: o.Traceparent, Attrs: attrs}
	if o.Timeout > 0 {
		r.Deadline = time.Now().Add(o.Timeout).UnixNano()
	}
	got, created, err := h.startRun(ctx, r, o.ClaimForDrive)
	if err != nil {
		return store.Run{}, fmt.Errorf("start %s: %w", o.ID, err)
	}
	if created {
		h.signal()
	} else {
		switch {
		case got.ModuleHash != m.Hash:
			return got, &ConflictError{RunID: o.ID, Field: "module"}
		case got.Workflow != o.Workflow:
			return got, &ConflictError{RunID: o.ID, Field: "workflow"}
		case !jsonEqual(got.Input, input):
			return got, &ConflictError{RunID: o.ID, Field: "input"}
		}
	}
	return got, nil
}

// newRun creates a pending run (seed and start time filled in) unless a
// run with its id exists, and returns the stored run.
func (h *Host) newRun(ctx context.Context, r store.Run) (store.Run, bool, error) {
	return h.cfg.Store.CreateRun(ctx, h.runDefaults(r))
}

// runDefaults is r as created now: a random seed and a start time unless
// given, pending.
func (h *Host) runDefaults(r store.Run) store.Run {
	if r.Seed == 0 {
		var b [8]byte
		rand.Read(b[:])
		r.Seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	now := time.Now()
	if r.StartTime == 0 {
		r.StartTime = now.UnixNano()
	}
	r.Status, r.CreatedAt, r.UpdatedAt = store.RunPending, now, now
	return r
}

// startRun is newRun for Start: with claim, the run is created leased to
// this host for the Drive that follows (startclaim.go).
func (h *Host) startRun(ctx context.Context, r store.Run, claim bool) (store.Run, bool, error) {
	if !claim {
		return h.newRun(ctx, r)
	}
	r = h.runDefaults(r)
	c, created, err := h.cfg.Store.CreateClaimedRun(ctx, r, h.owner, time.Now().UnixNano(), DefaultLeaseTTL)
	if err == nil && created {
		h.preclaim(c)
	}
	return c.Run, created, err
}

// createRun is newRun for a child run.
func (h *Host) createRun(ctx context.Context, r store.Run) (store.Run, error) {
	got, _, err := h.newRun(ctx, r)
	return got, err
}
