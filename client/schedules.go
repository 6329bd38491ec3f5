package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Schedules start runs of a workflow on a cron schedule (docs/schedules.md).

// ScheduleRequest is the body of POST /v1/schedules.
type ScheduleRequest struct {
	Name     string          `json:"name"`               // required
	Cron     string          `json:"cron"`               // required: 5 fields, 6 with seconds first, or @daily, @every 1h
	Timezone string          `json:"timezone,omitempty"` // an IANA name; default UTC
	Module   string          `json:"module"`             // required: a module name or hash
	Workflow string          `json:"workflow,omitempty"` // default: the module's only workflow
	Input    json.RawMessage `json:"input,omitempty"`    // default null
	Overlap  string          `json:"overlap,omitempty"`  // skip (default), buffer-one or allow
	Catchup  string          `json:"catchup,omitempty"`  // a duration such as "1h"; default 1m
}

// Schedule is a schedule as the API shows it.
type Schedule struct {
	Name     string          `json:"name"`     // the schedule's name
	Cron     string          `json:"cron"`     // its cron expression
	Timezone string          `json:"timezone"` // an IANA name
	Module   string          `json:"module"`   // the module name or hash it was created with
	Workflow string          `json:"workflow"` // the workflow each slot starts
	Input    json.RawMessage `json:"input"`    // the input of each run
	Overlap  string          `json:"overlap"`  // skip, buffer-one or allow
	Catchup  string          `json:"catchup"`  // a Go duration, "1h0m0s"
	Paused   bool            `json:"paused"`   // no slot starts while paused
	// Next are the next slots (up to 3; none while paused).
	Next []time.Time `json:"next"`
	// LastRun is the run of the latest started slot, LastStatus its
	// status; both omitted before the first.
	LastRun    string `json:"last_run,omitempty"`
	LastStatus string `json:"last_status,omitempty"`
	// Fired counts the slots started; Missed the slots skipped because
	// they were older than the catch-up window; Overlapped the slots
	// skipped by the overlap policy; Buffered is the slot kept by
	// buffer-one, if any.
	Fired      int64      `json:"fired"`
	Missed     int64      `json:"missed"`
	Overlapped int64      `json:"overlapped"`
	Buffered   *time.Time `json:"buffered,omitempty"`
	// CreatedAt is when the schedule was created.
	CreatedAt time.Time `json:"created_at"`
}

// ScheduleList answers GET /v1/schedules.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"` // by name
}

// CreateSchedule creates a schedule (POST /v1/schedules). A bad field is
// an *Error with CodeBadRequest naming the rule, a taken name one with
// CodeConflict, an unknown module one with CodeNotFound.
func (c *Client) CreateSchedule(ctx context.Context, req ScheduleRequest) (Schedule, error) {
	var s Schedule
	_, err := c.post(ctx, "/v1/schedules", req, &s)
	return s, err
}

// Schedules lists the schedules by name (GET /v1/schedules).
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	var l ScheduleList
	err := c.get(ctx, "/v1/schedules", &l)
	return l.Schedules, err
}

// Schedule returns a schedule (GET /v1/schedules/{name}).
func (c *Client) Schedule(ctx context.Context, name string) (Schedule, error) {
	var s Schedule
	err := c.get(ctx, "/v1/schedules/"+esc(name), &s)
	return s, err
}

// DeleteSchedule deletes a schedule (DELETE /v1/schedules/{name}); the
// runs it started stay.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	_, err := c.call(ctx, http.MethodDelete, "/v1/schedules/"+esc(name), nil, nil)
	return err
}

// PauseSchedule pauses a schedule: no slot starts until it is resumed
// (POST /v1/schedules/{name}/pause).
func (c *Client) PauseSchedule(ctx context.Context, name string) (Schedule, error) {
	return c.editSchedule(ctx, name, "pause")
}

// ResumeSchedule resumes a paused schedule
// (POST /v1/schedules/{name}/resume).
func (c *Client) ResumeSchedule(ctx context.Context, name string) (Schedule, error) {
	return c.editSchedule(ctx, name, "resume")
}

func (c *Client) editSchedule(ctx context.Context, name, verb string) (Schedule, error) {
	var s Schedule
	_, err := c.post(ctx, "/v1/schedules/"+esc(name)+"/"+verb, noBody, &s)
	return s, err
}

// TriggerSchedule starts a run of a schedule now and returns it
// (POST /v1/schedules/{name}/trigger).
func (c *Client) TriggerSchedule(ctx context.Context, name string) (Run, error) {
	var r Run
	_, err := c.post(ctx, "/v1/schedules/"+esc(name)+"/trigger", noBody, &r)
	return r, err
}
