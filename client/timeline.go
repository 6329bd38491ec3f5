package client

import (
	"context"
	"encoding/json"
)

// RunOps answers GET /v1/runs/{id}/ops: the run and every record of its
// journal with all its fields and its timeline, as the web UI draws them.
type RunOps struct {
	Run Run  `json:"run"` // the run record
	Ops []Op `json:"ops"` // its journal records, in settle order (pending last)
	// Waiting is what the run waits on, while it has not ended (as in the
	// OutcomeView).
	Waiting *Waiting `json:"waiting,omitempty"`
	// Drops are the idle points where the run's instance was dropped and
	// replayed, in journal order.
	Drops []Drop `json:"drops"`
	// ModuleName is the name the run's module was deployed under (empty
	// for an unnamed or deleted module).
	ModuleName string `json:"module_name"`
}

// Op is one journal record of a run.
type Op struct {
	Key      string          `json:"key"`                // the op's lineage key
	Kind     string          `json:"kind"`               // step, call, sleep, promise, child, …
	Function string          `json:"function"`           // the step's, activity's or child workflow's name
	Status   string          `json:"status"`             // pending, ok or error
	Value    json.RawMessage `json:"value"`              // JSON when ok, else null
	Error    *string         `json:"error"`              // the error when error, else null
	Attempts int             `json:"attempts"`           // attempts started
	Seq      int64           `json:"seq"`                // settle sequence; 0 while pending
	Waited   bool            `json:"waited"`             // delivered at an idle point (else inline)
	Orphaned bool            `json:"orphaned,omitempty"` // the run's current code no longer reaches it
	VTime    *string         `json:"vtime"`              // virtual time at settlement, RFC 3339
	Deadline *string         `json:"deadline"`           // a timer's deadline, RFC 3339
	Updated  string          `json:"updated_at"`         // when the record last changed, RFC 3339
	Child    *string         `json:"child,omitempty"`    // the child run's id, for a child op
	// Schema is the JSON Schema of a typed promise's value
	// (skein.Promise[T]), which a settlement must have; omitted for
	// other ops and for a promise without one.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Started and Settled are when the op was first issued and when its
	// settlement was recorded (RFC 3339, null when not known), DurationMS
	// the time between in milliseconds, and Tries its recorded attempts.
	Started    *string  `json:"started_at"`
	Settled    *string  `json:"settled_at"`
	DurationMS *float64 `json:"duration_ms"`
	Tries      []Try    `json:"attempt_log,omitempty"`
}

// Try is one recorded attempt of an op: a step body under a retry policy
// or timeout, or an activity call that was retried.
type Try struct {
	N          int      `json:"n"`           // from 1
	Started    *string  `json:"started_at"`  // RFC 3339; null when not known
	Ended      *string  `json:"ended_at"`    // null while the attempt runs
	DurationMS *float64 `json:"duration_ms"` // null unless both times are known
	Error      *string  `json:"error"`       // the attempt's error; null when it succeeded or runs
}

// Drop is an idle point where the run's instance was dropped (evicted or
// suspended), and when the execution that replayed it began.
type Drop struct {
	Seq      int     `json:"seq"`         // settled records in the journal at the drop
	Dropped  *string `json:"dropped_at"`  // null when not known (the process stopped)
	Replayed *string `json:"replayed_at"` // null until a replay began
}

// Ops returns every journal record of a run with its timeline
// (GET /v1/runs/{id}/ops).
func (c *Client) Ops(ctx context.Context, id string) (RunOps, error) {
	var v RunOps
	err := c.get(ctx, "/v1/runs/"+esc(id)+"/ops", &v)
	return v, err
}
