package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/runjson"
	"github.com/skeinrun/skein/store"
)

// start: POST /v1/runs. 201 with a new run; 200 with the existing run
// when the id names a run started with the same request; 409 when it was
// started with a different one. A traceparent header makes the run's
// span its child (docs/observability.md); a malformed one is a 400.
func (a *api) start(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	ctx := r.Context()
	if req.Module == "" {
		a.fail(w, r, badRequest(`"module" is required: a module name or hash (see GET /v1/modules)`))
		return
	}
	m, err := a.c(r).Module(ctx, req.Module)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("no module %q (by hash or name); deploy it first: skein deploy MODULE.wasm --name %s (or POST /v1/modules?name=%s)", req.Module, req.Module, req.Module)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if req.Workflow == "" {
		if len(m.Workflows) != 1 {
			a.fail(w, r, badRequest(`"workflow" is required: module %q registers %s`, req.Module, strings.Join(m.Workflows, ", ")))
			return
		}
		req.Workflow = m.Workflows[0]
	}
	if !slices.Contains(m.Workflows, req.Workflow) {
		a.fail(w, r, badRequest("module %q has no workflow %q; it registers %s", req.Module, req.Workflow, strings.Join(m.Workflows, ", ")))
		return
	}
	var timeout time.Duration
	if req.Timeout != "" {
		if timeout, err = time.ParseDuration(req.Timeout); err != nil || timeout <= 0 {
			a.fail(w, r, badRequest(`"timeout" %q is not a positive duration such as "30s" or "2h"`, req.Timeout))
			return
		}
	}
	existed := false
	if req.ID != "" {
		_, err := a.c(r).Run(ctx, req.ID)
		existed = err == nil
	}
	run, err := a.c(r).Start(ctx, host.StartOptions{Module: m.Hash, Workflow: req.Workflow, Input: req.Input, ID: req.ID, Timeout: timeout,
		Traceparent: r.Header.Get("Traceparent"), Attributes: req.Attributes})
	if err != nil {
		if errors.Is(err, host.ErrInvalid) {
			// The client knows it asked to start: the message is the rule.
			err = badRequest("%s", strings.TrimPrefix(err.Error(), "start: "))
		}
		a.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if existed {
		status = http.StatusOK
	}
	writeJSON(w, status, runJSON(run))
}

func joinStatuses() string {
	s := make([]string, len(store.RunStatuses))
	for i, st := range store.RunStatuses {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

func noRun(id string) error { return notFound("no run %q", id) }

// pathRun reads the run named by the path; on an error (404 for an
// unknown run) it answers the request itself and reports false.
func (a *api) pathRun(w http.ResponseWriter, r *http.Request) (store.Run, bool) {
	id := r.PathValue("id")
	run, err := a.c(r).Run(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		err = noRun(id)
	}
	if err != nil {
		a.fail(w, r, err)
		return store.Run{}, false
	}
	return run, true
}

// run: GET /v1/runs/{id}.
func (a *api) run(w http.ResponseWriter, r *http.Request) {
	run, ok := a.pathRun(w, r)
	if !ok {
		return
	}
	v := []Run{runJSON(run)}
	if err := a.withAttrs(r, v); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v[0])
}

// leases: GET /v1/runs/{id}/leases, the run's lease history.
func (a *api) leases(w http.ResponseWriter, r *http.Request) {
	// LeaseHistory has no error for an unknown run: it has no claims.
	run, ok := a.pathRun(w, r)
	if !ok {
		return
	}
	id := run.ID
	hist, err := a.c(r).LeaseHistory(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	l := LeaseList{Run: id, Leases: make([]Lease, 0, len(hist))}
	for _, rec := range hist {
		l.Leases = append(l.Leases, leaseJSON(rec))
	}
	writeJSON(w, http.StatusOK, l)
}

// outcomes: GET /v1/runs/{id}/outcomes, the view `skein run --json` prints.
func (a *api) outcomes(w http.ResponseWriter, r *http.Request) {
	run, outs, ok := a.inspect(w, r)
	if !ok {
		return
	}
	v := runjson.From(run, outs)
	if !a.addTasks(w, r, v.Waiting) {
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// addTasks fills in the remote tasks of what a run waits on; on an error
// it answers the request itself and reports false.
func (a *api) addTasks(w http.ResponseWriter, r *http.Request, wt *client.Waiting) bool {
	if wt == nil {
		return true
	}
	ts, err := a.c(r).Tasks(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return false
	}
	runjson.AddTasks(wt, ts, time.Now())
	return true
}

// cancel: POST /v1/runs/{id}/cancel with an optional {"reason": "..."}.
func (a *api) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req CancelRequest
	if err := a.decode(w, r, &req, true); err != nil {
		a.fail(w, r, err)
		return
	}
	run, err := a.c(r).Cancel(r.Context(), id, req.Reason)
	switch {
	case errors.Is(err, host.ErrNotFound):
		err = noRun(id)
	case errors.Is(err, host.ErrTerminal):
		if run.Status == "" {
			run, _ = a.c(r).Run(r.Context(), id)
		}
		err = &requestError{status: http.StatusConflict, code: CodeConflict, msg: fmt.Sprintf("run %q has ended (%s); it cannot be canceled", id, run.Status)}
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, runJSON(run))
}

// resolve: POST /v1/promises/{id} with {"value": JSON} or {"error": "text"}.
func (a *api) resolve(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req ResolveRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	hasValue, hasError := len(req.Value) > 0, req.Error != nil
	switch {
	case hasValue && hasError:
		a.fail(w, r, badRequest(`give either "value" or "error", not both`))
		return
	case !hasValue && !hasError:
		a.fail(w, r, badRequest(`give "value" (any JSON) or "error" (a non-empty string)`))
		return
	case hasError && *req.Error == "":
		a.fail(w, r, badRequest(`"error" must be a non-empty string`))
		return
	}
	errMsg, status := "", "ok"
	if hasError {
		errMsg, status = *req.Error, "error"
	}
	err := a.c(r).Resolve(r.Context(), id, json.RawMessage(req.Value), errMsg)
	already := errors.Is(err, host.ErrAlreadySettled)
	switch {
	case already:
		err = nil
	case errors.Is(err, host.ErrNotFound):
		err = notFound("no promise %q (a promise's id is {run}.{key})", id)
	case errors.Is(err, host.ErrConflict):
		err = &requestError{status: http.StatusConflict, code: CodeConflict, msg: fmt.Sprintf("promise %q: %v", id, err)}
	case errors.Is(err, host.ErrInvalid):
		err = badRequest("%s", strings.TrimPrefix(err.Error(), "resolve "+id+": "))
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, Resolved{Promise: id, Status: status, AlreadySettled: already})
}

// inspect reads the run named by the path and its outcomes; on an error
// it answers the request itself and reports false.
func (a *api) inspect(w http.ResponseWriter, r *http.Request) (store.Run, []host.Outcome, bool) {
	id := r.PathValue("id")
	run, outs, err := a.c(r).Inspect(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		err = noRun(id)
	}
	if err != nil {
		a.fail(w, r, err)
		return store.Run{}, nil, false
	}
	return run, outs, true
}
