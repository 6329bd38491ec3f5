package client

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// OutcomeView is a run with its outcome table (GET /v1/runs/{id}/outcomes),
// the same document as `skein run --json` and `skein inspect --json`.
type OutcomeView struct {
	Run      string          `json:"run"`      // the run's id
	Workflow string          `json:"workflow"` // the workflow it runs
	Status   string          `json:"status"`   // one of the Status values
	Result   json.RawMessage `json:"result"`   // null until the run completes; a continued run's is its successor's input
	Error    *string         `json:"error"`    // null unless the run failed, diverged or was canceled
	// ContinuedFrom is the run this one continued (continue-as-new),
	// ContinuedAs the run this one continued as; each absent otherwise.
	ContinuedFrom string `json:"continued_from,omitempty"`
	ContinuedAs   string `json:"continued_as,omitempty"`
	// ResetTo, ResetFrom and ResetKey are the links of a reset, as in Run.
	ResetTo   string `json:"reset_to,omitempty"`
	ResetFrom string `json:"reset_from,omitempty"`
	ResetKey  string `json:"reset_key,omitempty"`
	// Abandoned: the run's parent ended before it and left it running
	// (skein.ParentClose(skein.AbandonChild)); absent otherwise.
	Abandoned bool `json:"abandoned,omitempty"`
	// Paused is set while the run is paused (Run.Paused).
	Paused *Pause `json:"paused,omitempty"`
	// Outcomes are the run's durable ops in settle order, pending last.
	Outcomes []Outcome `json:"outcomes"`
	// Waiting is what the run waits on, while it has not ended (absent
	// otherwise, or when it waits on nothing).
	Waiting *Waiting `json:"waiting,omitempty"`
}

// HasKey reports whether the run has an outcome at key: it has issued the
// op of that lineage key.
func (v OutcomeView) HasKey(key string) bool {
	for _, o := range v.Outcomes {
		if o.Key == key {
			return true
		}
	}
	return false
}

// Outcome is one row of the outcome table.
type Outcome struct {
	Key      string          `json:"key"`                // the op's lineage key; its durable id is {run}.{key}
	Function string          `json:"function"`           // the step, activity, workflow or op kind
	Status   string          `json:"status"`             // pending, ok or error
	Value    json.RawMessage `json:"value"`              // the value when ok, else null
	Error    *string         `json:"error"`              // the error when error, else null
	Attempts int             `json:"attempts"`           // attempts started (steps and activities)
	Orphaned bool            `json:"orphaned,omitempty"` // a record the run's current code no longer reaches
}

// Waiting is what a run that has not ended waits on: its pending
// promises (each with its full id and a `skein resolve` line to paste),
// timers (with their due time), child runs, and activities (step bodies
// and activity calls not settled yet). Orphaned records are left out.
type Waiting struct {
	Promises   []WaitPromise  `json:"promises"`   // pending external promises
	Timers     []WaitTimer    `json:"timers"`     // pending durable timers
	Children   []WaitChild    `json:"children"`   // pending child runs
	Activities []WaitActivity `json:"activities"` // steps and activity calls not settled
}

// WaitPromise is a pending external promise.
type WaitPromise struct {
	ID      string `json:"id"`      // the full id {run}.{key} that settles it
	Key     string `json:"key"`     // its key in the run
	Resolve string `json:"resolve"` // the command that settles it, to paste (replace JSON)
}

// WaitTimer is a pending durable timer (skein.Sleep).
type WaitTimer struct {
	Key string    `json:"key"` // its key in the run
	Due time.Time `json:"due"` // when it fires
}

// WaitChild is a pending child run.
type WaitChild struct {
	Key      string `json:"key"`      // the child op's key in the run
	Run      string `json:"run"`      // the child run's id
	Workflow string `json:"workflow"` // the child's workflow
}

// WaitActivity is a step body or activity call that has not settled:
// running, or waiting for its next attempt.
type WaitActivity struct {
	Key      string `json:"key"`      // its key in the run
	Kind     string `json:"kind"`     // step or call
	Function string `json:"function"` // the step's or activity's name
	Attempts int    `json:"attempts"` // attempts started so far
	// Task is the remote activity task of a call that a worker serves
	// (docs/activities.md); omitted for the others.
	Task *WaitTask `json:"task,omitempty"`
}

// WaitTask is where a remote activity call stands: queued for a worker
// (or for its retry's backoff), or held by one.
type WaitTask struct {
	State     string     `json:"state"`                  // queued or claimed
	Attempt   int        `json:"attempt"`                // the current attempt, from 1
	Worker    string     `json:"worker,omitempty"`       // while claimed
	ClaimedAt *time.Time `json:"claimed_at,omitempty"`   // while claimed
	Heartbeat *time.Time `json:"heartbeat_at,omitempty"` // the last heartbeat, while claimed
	RetryAt   *time.Time `json:"retry_at,omitempty"`     // a queued retry waits until then
	LastError string     `json:"last_error,omitempty"`   // the previous attempt's error
}

// Outcomes returns a run with its outcome table and what it waits on
// (GET /v1/runs/{id}/outcomes).
func (c *Client) Outcomes(ctx context.Context, id string) (OutcomeView, error) {
	var v OutcomeView
	err := c.get(ctx, "/v1/runs/"+esc(id)+"/outcomes", &v)
	return v, err
}

// WaitOptions configure Wait.
type WaitOptions struct {
	// Poll is how often the run is read; default 250ms. The API has no
	// long poll for a run's end: Wait polls GET /v1/runs/{id}/outcomes.
	Poll time.Duration
	// Issued, when set, ends the wait as soon as the run has issued the op
	// at this key (a promise to settle, say), whether or not it has ended.
	Issued string
	// Follow follows a chain of continue-as-new: a run that continued is
	// not the end, its successor is waited for, and so on.
	Follow bool
	// Progress, when set, is called after every read with the run read
	// (id, a successor's under Follow) and its view, or with the error of
	// a read that failed and will be tried again (v is then the last view
	// read).
	Progress func(id string, v OutcomeView, err error)
}

// Wait waits until run id has ended (Ended: completed, failed, canceled,
// continued, or diverged), or has issued o.Issued, and returns its view;
// check the view's Status, and HasKey(o.Issued): a run may end without
// issuing it. When ctx ends first it returns the last view read of the
// run it waits for (only its Run set when none was read) with ctx's error. An error answer (an unknown run: CodeNotFound) ends the
// wait; once the server has answered, a failure to reach it (a restart)
// is tried again until ctx ends.
func (c *Client) Wait(ctx context.Context, id string, o WaitOptions) (OutcomeView, error) {
	poll := o.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	v := OutcomeView{Run: id}
	reached := false
	for {
		got, err := c.Outcomes(ctx, id)
		switch {
		case err == nil:
			v, reached = got, true
		case ctx.Err() != nil:
			return v, ctx.Err()
		case !reached || errors.As(err, new(*Error)):
			return v, err
		}
		if o.Progress != nil {
			o.Progress(id, v, err)
		}
		if err == nil && o.Issued != "" && v.HasKey(o.Issued) {
			return v, nil
		}
		if err == nil && o.Follow && v.ContinuedAs != "" {
			id = v.ContinuedAs // the successor, created with the run's end
			v = OutcomeView{Run: id}
			continue
		}
		if err == nil && Ended(v.Status) {
			return v, nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, ctx.Err()
		case <-t.C:
		}
	}
}
