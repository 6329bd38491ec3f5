// Package runjson holds the JSON form of a run and its outcome table, as
// `skein run --json`, `skein inspect --json` and the HTTP API's
// GET /v1/runs/{id}/outcomes print it. One definition keeps the three in
// step.
package runjson

import (
	"encoding/json"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// View is a run with its outcomes.
type View struct {
	Run      string          `json:"run"`
	Workflow string          `json:"workflow"`
	Status   string          `json:"status"`
	Result   json.RawMessage `json:"result"` // null until the run completes; a continued run's is its successor's input
	Error    *string         `json:"error"`  // null unless the run failed, diverged or was canceled
	// ContinuedFrom is the run this one continued (skein.ContinueAsNew),
	// ContinuedAs the run this one continued as; each absent otherwise.
	ContinuedFrom string `json:"continued_from,omitempty"`
	ContinuedAs   string `json:"continued_as,omitempty"`
	// Abandoned: the run's parent ended before it and left it running
	// (skein.ParentClose(skein.AbandonChild)); absent otherwise.
	Abandoned bool      `json:"abandoned,omitempty"`
	Outcomes  []Outcome `json:"outcomes"`
	// Waiting is what the run waits on, while it has not ended (absent
	// otherwise, or when it waits on nothing).
	Waiting *Waiting `json:"waiting,omitempty"`
}

// Outcome is one row of the outcome table.
type Outcome struct {
	Key      string          `json:"key"`
	Function string          `json:"function"`
	Status   string          `json:"status"`
	Value    json.RawMessage `json:"value"`
	Error    *string         `json:"error"`
	Attempts int             `json:"attempts"`
	Orphaned bool            `json:"orphaned,omitempty"`
}

// From builds the view of a run and its outcomes (host.Inspect; in the
// order given: settle order, pending last).
func From(r store.Run, outs []host.Outcome) View {
	v := View{Run: r.ID, Workflow: r.Workflow, Status: string(r.Status), Outcomes: []Outcome{},
		ContinuedFrom: host.ContinuedFromID(r.ID), Abandoned: r.Abandoned}
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
		ov := Outcome{Key: o.Key, Function: o.Function, Status: string(o.Status), Attempts: o.Attempts, Orphaned: o.Orphaned}
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
	return v
}
