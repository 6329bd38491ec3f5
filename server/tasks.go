package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// The worker protocol (docs/api.md, "Activity workers"): workers in other
// processes claim the activity tasks of runs, keep their leases with
// heartbeats and report each attempt's end.

// DefaultMaxClaimWait is the default of Options.MaxClaimWait.
const DefaultMaxClaimWait = 30 * time.Second

// claimRoute is a claim: a long poll, answered when tasks come or its
// wait ends.
var claimRoute = routeClass{bodyTypes: []string{"application/json"},
	timeout: func(o *Options) time.Duration { return o.MaxClaimWait + o.RequestTimeout },
	limit:   "--max-claim-wait, server.Options.MaxClaimWait"}

func (a *api) routeTasks(mux *http.ServeMux) {
	a.handle(mux, "POST /v1/tasks/claim", claimRoute, a.claimTasks)
	a.handle(mux, "POST /v1/tasks/heartbeat", apiRoute, a.heartbeatTask)
	a.handle(mux, "POST /v1/tasks/complete", apiRoute, a.completeTask)
	a.handle(mux, "POST /v1/tasks/fail", apiRoute, a.failTask)
	a.handle(mux, "POST /v1/tasks/stream", streamRoute, a.taskStream)
	a.handle(mux, "GET /v1/runs/{id}/tasks", apiRoute, a.runTasks)
}

// runTasks: GET /v1/runs/{id}/tasks, the run's remote activity calls.
func (a *api) runTasks(w http.ResponseWriter, r *http.Request) {
	run, ok := a.pathRun(w, r)
	if !ok {
		return
	}
	id := run.ID
	ts, err := a.c(r).Tasks(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := TaskList{Run: id, Tasks: make([]ActivityTask, 0, len(ts))}
	for _, t := range ts {
		out.Tasks = append(out.Tasks, activityTaskJSON(t))
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) claimTasks(w http.ResponseWriter, r *http.Request) {
	var req client.ClaimRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.WaitMS < 0 {
		a.fail(w, r, badRequest(`"wait_ms" must not be negative (got %d)`, req.WaitMS))
		return
	}
	wait := min(time.Duration(req.WaitMS)*time.Millisecond, a.o.MaxClaimWait)
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	defer context.AfterFunc(a.o.Stop, stop)()
	ts, err := a.c(r).ClaimTasks(ctx, host.ClaimOptions{Worker: req.Worker, Names: req.Names, Max: req.Max, Wait: wait})
	if errors.Is(err, host.ErrInvalid) {
		err = badRequest("%v", err)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := client.ClaimResponse{Tasks: make([]client.ClaimedTask, 0, len(ts))}
	for _, t := range ts {
		out.Tasks = append(out.Tasks, taskJSON(t, time.Now()))
	}
	writeJSON(w, http.StatusOK, out)
}

// taskJSON is a claimed task as a worker receives it: it should send a
// heartbeat every third of its lease.
func taskJSON(t store.Task, now time.Time) client.ClaimedTask {
	lease := time.Unix(0, t.Expiry).Sub(now)
	return client.ClaimedTask{RunID: t.RunID, Key: t.Key, Attempt: t.Attempt, Name: t.Name, Input: t.Input,
		IdempotencyKey: t.IdempotencyKey(), LeaseExpiry: nsTime(t.Expiry), HeartbeatMS: max(lease.Milliseconds()/3, 1),
		TimeoutMS: time.Duration(t.Timeout).Milliseconds(), LastError: t.LastError, Traceparent: host.TraceparentOfAttempt(t, t.Attempt)}
}

// taskRef checks and converts the attempt a request names.
func taskRef(ref client.TaskRef) (host.TaskRef, error) {
	if ref.RunID == "" || ref.Key == "" || ref.Attempt < 1 || ref.Worker == "" {
		return host.TaskRef{}, badRequest(`"run_id", "key", "worker" and "attempt" (>= 1) are needed (got run_id %q, key %q, worker %q, attempt %d)`,
			ref.RunID, ref.Key, ref.Worker, ref.Attempt)
	}
	return host.TaskRef{RunID: ref.RunID, Key: ref.Key, Attempt: ref.Attempt, Worker: ref.Worker}, nil
}

// attemptRequest decodes into req a request that names an attempt at
// *ref (a field of req) and checks it; on an error it answers the
// request itself and reports false.
func (a *api) attemptRequest(w http.ResponseWriter, r *http.Request, req any, ref *client.TaskRef) (host.TaskRef, bool) {
	if err := a.decode(w, r, req, false); err != nil {
		a.fail(w, r, err)
		return host.TaskRef{}, false
	}
	tr, err := taskRef(*ref)
	if err != nil {
		a.fail(w, r, err)
		return host.TaskRef{}, false
	}
	return tr, true
}

// taskError maps the host's errors of a heartbeat or an end: an attempt
// that is no longer the worker's is 409, an unknown task 404.
func taskError(err error) error {
	switch {
	case errors.Is(err, host.ErrInvalid):
		return badRequest("%v", err)
	case errors.Is(err, store.ErrNotFound):
		return notFound("%v", err)
	case errors.Is(err, store.ErrConflict):
		return &requestError{status: http.StatusConflict, code: CodeConflict, msg: err.Error()}
	}
	return err
}

func (a *api) heartbeatTask(w http.ResponseWriter, r *http.Request) {
	var req client.HeartbeatRequest
	ref, ok := a.attemptRequest(w, r, &req, &req.TaskRef)
	if !ok {
		return
	}
	t, err := a.c(r).HeartbeatTask(r.Context(), ref, req.Progress)
	if err != nil {
		a.fail(w, r, taskError(err))
		return
	}
	writeJSON(w, http.StatusOK, client.HeartbeatResponse{LeaseExpiry: nsTime(t.Expiry)})
}

func (a *api) completeTask(w http.ResponseWriter, r *http.Request) {
	var req client.CompleteRequest
	ref, ok := a.attemptRequest(w, r, &req, &req.TaskRef)
	if !ok {
		return
	}
	if len(req.Result) == 0 {
		a.fail(w, r, badRequest(`"result" is needed (any JSON; null for none)`))
		return
	}
	if err := a.c(r).CompleteTask(r.Context(), ref, req.Result); err != nil {
		a.fail(w, r, taskError(err))
		return
	}
	writeJSON(w, http.StatusOK, client.TaskEnded{Status: "completed"})
}

func (a *api) failTask(w http.ResponseWriter, r *http.Request) {
	var req client.FailRequest
	ref, ok := a.attemptRequest(w, r, &req, &req.TaskRef)
	if !ok {
		return
	}
	if req.Error == "" {
		a.fail(w, r, badRequest(`"error" must be a non-empty string`))
		return
	}
	retry, err := a.c(r).FailTask(r.Context(), ref, req.Error, req.NonRetryable)
	if err != nil {
		a.fail(w, r, taskError(err))
		return
	}
	out := client.TaskEnded{Status: "failed"}
	if retry {
		out = client.TaskEnded{Status: "retry", Retry: true}
	}
	writeJSON(w, http.StatusOK, out)
}
