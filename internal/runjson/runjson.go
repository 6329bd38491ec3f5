// Package runjson builds the JSON form of a run and its outcome table
// (client.OutcomeView), as `skein run --json`, `skein inspect --json` and
// the HTTP API's GET /v1/runs/{id}/outcomes print it, from a host's
// records. One builder keeps the three in step.
package runjson

import (
	"encoding/json"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// From builds the view of a run and its outcomes (host.Inspect; in the
// order given: settle order, pending last).
func From(r store.Run, outs []host.Outcome) client.OutcomeView {
	v := client.OutcomeView{Run: r.ID, Workflow: r.Workflow, Status: string(r.Status), Outcomes: []client.Outcome{},
		ContinuedFrom: host.ContinuedFromID(r.ID), Abandoned: r.Abandoned,
		ResetTo: r.ResetTo, ResetFrom: r.ResetFrom, ResetKey: r.ResetKey}
	if r.Status == store.RunContinued {
		v.ContinuedAs = host.ContinuedRunID(r.ID)
	}
	if len(r.Result) > 0 {
		v.Result = json.RawMessage(r.Result)
	}
	if r.Error != "" {
		e := r.Error
		v.Error = &e
	}
	for _, o := range outs {
		ov := client.Outcome{Key: o.Key, Function: o.Function, Status: string(o.Status), Attempts: o.Attempts, Orphaned: o.Orphaned}
		if len(o.Value) > 0 {
			ov.Value = json.RawMessage(o.Value)
		}
		if o.Error != "" {
			e := o.Error
			ov.Error = &e
		}
		v.Outcomes = append(v.Outcomes, ov)
	}
	v.Waiting = WaitingOf(r, outs)
	v.Paused = PauseOf(r)
	return v
}

// PauseOf is the pause of run r as the API shows it; nil when it is not
// paused, or has ended (its execution reached its end before it could
// stop).
func PauseOf(r store.Run) *client.Pause {
	if !r.IsPaused() || r.Status.Terminal() {
		return nil
	}
	return &client.Pause{By: r.Paused.By, Reason: r.Paused.Reason, Since: time.Unix(0, r.Paused.At).UTC()}
}
