package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skeinrun/skein/store"
)

// batchAction is what a batch does to each run it selects. Do must be
// safe to call again on a run it was called on: a worker that dies
// between acting on a run and saving its progress leaves that one run
// to the next worker (batchrun.go).
type batchAction struct {
	// Check refuses bad arguments when the batch is created (nil: any).
	Check func(args json.RawMessage) error
	// Do acts on one run.
	Do func(ctx context.Context, h *Host, run store.Run, args json.RawMessage) error
}

// batchActions are the actions of batches, by name.
var batchActions = map[string]batchAction{
	"cancel":  {Check: checkCancelArgs, Do: cancelAction},
	"pause":   {Check: checkPauseArgs, Do: pauseAction},
	"unpause": {Check: checkNoArgs, Do: unpauseAction},
	"resume":  {Check: checkResumeArgs, Do: resumeAction},
	"delete":  {Check: checkNoArgs, Do: deleteAction},
	"reset":   {Check: checkResetArgs, Do: resetAction},
}

// IsBatchAction reports whether name is the name of a batch action
// (docs/operations.md, "Bulk actions").
func IsBatchAction(name string) bool {
	_, ok := batchActions[name]
	return ok
}

// batchAction returns the action of a batch by name: the package's, or
// one its tests give the host (testHooks.batchActions).
func (h *Host) batchAction(name string) (batchAction, bool) {
	if a, ok := h.hooks.batchActions[name]; ok {
		return a, true
	}
	a, ok := batchActions[name]
	return a, ok
}

func batchActionNames() string {
	var names []string
	for n := range batchActions {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// cancelArgs are the arguments of the cancel action.
type cancelArgs struct {
	Reason string `json:"reason,omitempty"` // default: "canceled"
}

// decodeArgs reads an action's arguments strictly: a JSON object with
// known fields only, or nothing.
func decodeArgs(args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("want a JSON object of the action's fields: %w", err)
	}
	return nil
}

func checkCancelArgs(args json.RawMessage) error {
	var a cancelArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	return store.CheckText("reason", a.Reason)
}

// cancelAction requests the run's cancellation (Host.Cancel). A run
// canceled already counts as done: a second call on the same run (after
// a worker's crash) finds it so.
func cancelAction(ctx context.Context, h *Host, run store.Run, args json.RawMessage) error {
	var a cancelArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	r, err := h.Cancel(ctx, run.ID, a.Reason)
	if errors.Is(err, ErrTerminal) && r.Status == store.RunCanceled {
		return nil
	}
	return err
}

// pauseArgs are the arguments of the pause action.
type pauseArgs struct {
	Reason string `json:"reason,omitempty"`
}

func checkPauseArgs(args json.RawMessage) error {
	var a pauseArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	return store.CheckText("reason", a.Reason)
}

// pauseAction pauses the run (Host.Pause), by "batch". Pausing twice
// keeps the first pause, so a second call is done at once.
func pauseAction(ctx context.Context, h *Host, run store.Run, args json.RawMessage) error {
	var a pauseArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	_, err := h.Pause(ctx, run.ID, "batch", a.Reason)
	return err
}

// unpauseAction unpauses the run (Host.Unpause); a run not paused is
// left as it is.
func unpauseAction(ctx context.Context, h *Host, run store.Run, args json.RawMessage) error {
	if err := decodeArgs(args, &struct{}{}); err != nil {
		return err
	}
	_, err := h.Unpause(ctx, run.ID)
	return err
}

// resumeArgs are the arguments of the resume action.
type resumeArgs struct {
	Module string `json:"module,omitempty"` // a module's name or hash; empty: the run's own
}

func checkResumeArgs(args json.RawMessage) error {
	var a resumeArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	return store.CheckText("module", a.Module)
}

// resumeAction points the run at the module (Host.ResumeOn). It waits
// for an execution of the run to stop first, so a batch over live runs
// goes at that pace; a second call replays the run on the same module.
func resumeAction(ctx context.Context, h *Host, run store.Run, args json.RawMessage) error {
	var a resumeArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	_, err := h.ResumeOn(ctx, run.ID, a.Module)
	return err
}

// deleteAction deletes the run (Host.DeleteRun), which refuses a run a
// live run still needs; a run gone already counts as done.
func deleteAction(ctx context.Context, h *Host, run store.Run, args json.RawMessage) error {
	if err := decodeArgs(args, &struct{}{}); err != nil {
		return err
	}
	err := h.DeleteRun(ctx, run.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func checkNoArgs(args json.RawMessage) error { return decodeArgs(args, &struct{}{}) }

// resetArgs are the arguments of the reset action: ResetOptions less
// the run and the new id.
type resetArgs struct {
	To     string          `json:"to"`
	Module string          `json:"module,omitempty"`
	Input  json.RawMessage `json:"input,omitempty"`
}

func checkResetArgs(args json.RawMessage) error {
	var a resetArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if a.To == "" {
		return errors.New("reset needs the key to reset to (\"to\")")
	}
	if len(a.Input) > 0 && !json.Valid(a.Input) {
		return errors.New("reset: input is not JSON")
	}
	return errors.Join(store.CheckText("to", a.To), store.CheckText("module", a.Module))
}

// resetAction resets the run to the key (Host.Reset). A run reset
// already (by the call before a worker's crash) counts as done: a reset
// run cannot be reset again.
func resetAction(ctx context.Context, h *Host, run store.Run, args json.RawMessage) error {
	var a resetArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	_, err := h.Reset(ctx, ResetOptions{RunID: run.ID, ToKey: a.To, Module: a.Module, Input: a.Input})
	if err != nil {
		if r, rerr := h.cfg.Store.Run(ctx, run.ID); rerr == nil && r.Status == store.RunReset {
			return nil
		}
	}
	return err
}
