package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/skeinrun/skein/store"
)

// The read side of the client role: what a caller (the server, a CLI,
// an embedder) looks up, without reaching for the store. The write side
// is Deploy, Start, Resolve, Cancel and Await.

// Run returns the stored run id. A run that does not exist is an error
// wrapping store.ErrNotFound.
func (h *Host) Run(ctx context.Context, id string) (store.Run, error) {
	return h.cfg.Store.Run(ctx, id)
}

// Runs lists the stored runs that f selects.
func (h *Host) Runs(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	if err := store.CheckText("the cursor", f.After); err != nil {
		return nil, invalidf("list runs: %w", err)
	}
	return h.cfg.Store.Runs(ctx, f)
}

// Modules lists the stored modules, without their bytes.
func (h *Host) Modules(ctx context.Context) ([]store.Module, error) {
	return h.cfg.Store.Modules(ctx)
}

// Module returns a stored module by hash, hash prefix or name, without
// its bytes. A module that does not exist is an error wrapping
// store.ErrNotFound.
func (h *Host) Module(ctx context.Context, ref string) (store.Module, error) {
	return h.cfg.Store.ModuleInfo(ctx, ref)
}

// LeaseHistory lists the leases taken on run id, oldest first.
func (h *Host) LeaseHistory(ctx context.Context, id string) ([]store.LeaseRecord, error) {
	return h.cfg.Store.LeaseHistory(ctx, id)
}

// Outcome is one row of a run's outcome table, as callers see it: what
// an op settled with, without the journal's replay bookkeeping.
type Outcome struct {
	Key      string // the op's key in the run, e.g. "t2.1"
	Kind     string // step, call, sleep, promise or child
	Function string // the step's or activity's name, the child's workflow, or the kind
	Status   store.OutcomeStatus
	Value    json.RawMessage // JSON, when ok
	Error    string          // when error
	Attempts int             // executions of the step body or activity so far
	// Seq is the outcome's place in the run's settle order (1, 2, …), 0
	// while pending; Waited tells an outcome delivered at an idle point
	// (the workflow waited for it) from one settled inline.
	Seq    int64
	Waited bool
	// VTime is the run's virtual time when it settled; Deadline a timer's
	// deadline. Zero when not set.
	VTime, Deadline time.Time
	// Orphaned: the latest execution of the run never reached the key
	// (the code changed since). Kept, never deleted.
	Orphaned  bool
	UpdatedAt time.Time
	// StartedAt is when the op was first issued and SettledAt when its
	// settlement was recorded, by the host's wall clock (zero when not
	// known): the timeline's data, never replayed (store.Outcome).
	StartedAt, SettledAt time.Time
	// Schema is the JSON Schema of a typed promise's value (empty for
	// other ops and for a promise issued without one).
	Schema json.RawMessage
}

// outcomeView is a stored outcome as an Outcome.
func outcomeView(o store.Outcome) Outcome {
	v := Outcome{Key: o.Key, Kind: o.Kind, Function: o.Function, Status: o.Status, Value: o.Value, Error: o.Error,
		Attempts: o.Attempts, Seq: o.Seq, Waited: o.Waited, Orphaned: o.Orphaned, UpdatedAt: o.UpdatedAt, Schema: o.Schema}
	if o.VTime != 0 {
		v.VTime = time.Unix(0, o.VTime)
	}
	if o.Deadline != 0 {
		v.Deadline = time.Unix(0, o.Deadline)
	}
	if o.StartedAt != 0 {
		v.StartedAt = time.Unix(0, o.StartedAt)
	}
	if o.SettledAt != 0 {
		v.SettledAt = time.Unix(0, o.SettledAt)
	}
	return v
}

// Inspect returns a run and its outcomes in settle order (pending last).
func (h *Host) Inspect(ctx context.Context, runID string) (store.Run, []Outcome, error) {
	r, err := h.cfg.Store.Run(ctx, runID)
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("inspect %s: %w", runID, err)
	}
	os, err := h.cfg.Store.Outcomes(ctx, runID)
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("inspect %s: %w", runID, err)
	}
	vs := make([]Outcome, len(os))
	for i, o := range os {
		vs[i] = outcomeView(o)
	}
	return r, vs, nil
}
