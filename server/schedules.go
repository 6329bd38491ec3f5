package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Schedules and webhooks (docs/api.md, docs/schedules.md).

// DefaultMaxHookBodyBytes is the default of Options.MaxHookBodyBytes.
const DefaultMaxHookBodyBytes = 1 << 20

// The documents of schedules and webhooks (defined in package client).
type (
	// ScheduleRequest is client.ScheduleRequest: the body of POST /v1/schedules.
	ScheduleRequest = client.ScheduleRequest
	// Schedule is client.Schedule: a schedule as the API shows it.
	Schedule = client.Schedule
	// ScheduleList is client.ScheduleList: GET /v1/schedules.
	ScheduleList = client.ScheduleList
	// HookRequest is client.HookRequest: the body of POST /v1/hooks.
	HookRequest = client.HookRequest
	// Hook is client.Hook: a webhook as the API shows it.
	Hook = client.Hook
	// HookList is client.HookList: GET /v1/hooks.
	HookList = client.HookList
)

func scheduleJSON(s host.ScheduleInfo) Schedule {
	v := Schedule{Name: s.Name, Cron: s.Cron, Timezone: s.Timezone, Module: s.Module, Workflow: s.Workflow,
		Input: json.RawMessage(s.Input), Overlap: string(s.Overlap), Catchup: s.Catchup.String(), Paused: s.Paused,
		Next: []time.Time{}, LastRun: s.LastRun, LastStatus: string(s.LastStatus),
		Fired: s.Fired, Missed: s.Missed, Overlapped: s.Overlapped, Buffered: unixTimeOf(s.Buffered), CreatedAt: s.CreatedAt.UTC()}
	if v.Timezone == "" {
		v.Timezone = "UTC"
	}
	for _, t := range s.Next {
		v.Next = append(v.Next, t.UTC())
	}
	return v
}

// hookJSON is hook h of namespace ns on the wire; its URL is where
// deliveries go: /v1/hooks/{name} in the default namespace, else
// /v1/namespaces/{ns}/hooks/{name}, which a sender that cannot set
// headers can call.
func hookJSON(ns string, h store.Hook) Hook {
	url := "/v1/hooks/" + h.Name
	if ns != store.DefaultNamespace {
		url = "/v1/namespaces/" + ns + "/hooks/" + h.Name
	}
	v := Hook{Name: h.Name, Module: h.Module, Workflow: h.Workflow, SecretEnv: h.SecretEnv, Secret: h.Secret, Scheme: h.Scheme,
		KeepHeaders: h.KeepHeaders, URL: url, CreatedAt: h.CreatedAt.UTC()}
	if v.Scheme == "" && (h.SecretEnv != "" || h.Secret != "") { // a hook from before schemes
		v.Scheme = host.SchemeGitHub
	}
	if h.Tolerance > 0 {
		v.Tolerance = h.Tolerance.String()
	}
	return v
}

// routeSchedules registers the endpoints of this file.
func (a *api) routeSchedules(mux *http.ServeMux) {
	a.handle(mux, "POST /v1/schedules", apiRoute, a.createSchedule)
	a.handle(mux, "GET /v1/schedules", apiRoute, a.schedules)
	a.handle(mux, "GET /v1/schedules/{name}", apiRoute, a.schedule)
	a.handle(mux, "DELETE /v1/schedules/{name}", apiRoute, a.deleteSchedule)
	a.handle(mux, "POST /v1/schedules/{name}/pause", apiRoute, a.editSchedule(host.Client.PauseSchedule))
	a.handle(mux, "POST /v1/schedules/{name}/resume", apiRoute, a.editSchedule(host.Client.ResumeSchedule))
	a.handle(mux, "POST /v1/schedules/{name}/trigger", apiRoute, a.triggerSchedule)
	a.handle(mux, "POST /v1/hooks", apiRoute, a.createHook)
	a.handle(mux, "GET /v1/hooks", apiRoute, a.hooks)
	a.handle(mux, "GET /v1/hooks/{name}", apiRoute, a.hook)
	a.handle(mux, "DELETE /v1/hooks/{name}", apiRoute, a.deleteHook)
	a.handle(mux, "POST /v1/hooks/{name}", hookRoute, a.deliver)
	a.handle(mux, "POST /v1/namespaces/{ns}/hooks/{name}", hookRoute, a.deliver)
}

// failNamed answers err, turning the host's kinds of bad input into 400
// and an unknown name into 404.
func (a *api) failNamed(w http.ResponseWriter, r *http.Request, what string, err error) {
	switch {
	case errors.Is(err, host.ErrInvalid):
		err = badRequest("%v", err)
	case errors.Is(err, store.ErrNotFound) && r.PathValue("name") != "":
		err = notFound("no %s %q", what, r.PathValue("name"))
	case errors.Is(err, store.ErrConflict):
		err = &requestError{status: http.StatusConflict, code: CodeConflict, msg: fmt.Sprintf("a %s of that name exists: %v", what, err)}
	}
	a.fail(w, r, err)
}

func (a *api) createSchedule(w http.ResponseWriter, r *http.Request) {
	var req ScheduleRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	o := host.ScheduleOptions{Name: req.Name, Cron: req.Cron, Timezone: req.Timezone, Module: req.Module, Workflow: req.Workflow,
		Input: req.Input, Overlap: store.Overlap(req.Overlap)}
	if req.Catchup != "" {
		d, err := time.ParseDuration(req.Catchup)
		if err != nil || d <= 0 {
			a.fail(w, r, badRequest(`"catchup" %q is not a positive duration such as "10m" or "24h"`, req.Catchup))
			return
		}
		o.Catchup = d
	}
	sc, err := a.c(r).CreateSchedule(r.Context(), o)
	if err != nil {
		a.failNamed(w, r, "schedule", err)
		return
	}
	writeJSON(w, http.StatusCreated, scheduleJSON(sc))
}

func (a *api) schedules(w http.ResponseWriter, r *http.Request) {
	scs, err := a.c(r).Schedules(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	l := ScheduleList{Schedules: make([]Schedule, 0, len(scs))}
	for _, sc := range scs {
		l.Schedules = append(l.Schedules, scheduleJSON(sc))
	}
	writeJSON(w, http.StatusOK, l)
}

func (a *api) schedule(w http.ResponseWriter, r *http.Request) {
	sc, err := a.c(r).Schedule(r.Context(), r.PathValue("name"))
	if err != nil {
		a.failNamed(w, r, "schedule", err)
		return
	}
	writeJSON(w, http.StatusOK, scheduleJSON(sc))
}

func (a *api) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	if err := a.c(r).DeleteSchedule(r.Context(), r.PathValue("name")); err != nil {
		a.failNamed(w, r, "schedule", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) editSchedule(edit func(c host.Client, ctx context.Context, name string) (host.ScheduleInfo, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sc, err := edit(a.c(r), r.Context(), r.PathValue("name"))
		if err != nil {
			a.failNamed(w, r, "schedule", err)
			return
		}
		writeJSON(w, http.StatusOK, scheduleJSON(sc))
	}
}

func (a *api) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	run, err := a.c(r).TriggerSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		a.failNamed(w, r, "schedule", err)
		return
	}
	writeJSON(w, http.StatusCreated, runJSON(run))
}

func (a *api) createHook(w http.ResponseWriter, r *http.Request) {
	var req HookRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	o := host.HookOptions{Name: req.Name, Module: req.Module, Workflow: req.Workflow, SecretEnv: req.SecretEnv, Secret: req.Secret,
		Scheme: req.Scheme, KeepHeaders: req.KeepHeaders}
	if req.Tolerance != "" {
		d, err := time.ParseDuration(req.Tolerance)
		if err != nil || d <= 0 {
			a.fail(w, r, badRequest(`"tolerance" %q is not a positive duration such as "5m"`, req.Tolerance))
			return
		}
		o.Tolerance = d
	}
	hk, err := a.c(r).CreateHook(r.Context(), o)
	if err != nil {
		a.failNamed(w, r, "hook", err)
		return
	}
	writeJSON(w, http.StatusCreated, hookJSON(a.nsOf(r), hk))
}

func (a *api) hooks(w http.ResponseWriter, r *http.Request) {
	hks, err := a.c(r).Hooks(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	l := HookList{Hooks: make([]Hook, 0, len(hks))}
	for _, hk := range hks {
		l.Hooks = append(l.Hooks, hookJSON(a.nsOf(r), hk))
	}
	writeJSON(w, http.StatusOK, l)
}

func (a *api) hook(w http.ResponseWriter, r *http.Request) {
	hk, err := a.c(r).Hook(r.Context(), r.PathValue("name"))
	if err != nil {
		a.failNamed(w, r, "hook", err)
		return
	}
	writeJSON(w, http.StatusOK, hookJSON(a.nsOf(r), hk))
}

func (a *api) deleteHook(w http.ResponseWriter, r *http.Request) {
	if err := a.c(r).DeleteHook(r.Context(), r.PathValue("name")); err != nil {
		a.failNamed(w, r, "hook", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// deliver: POST /v1/hooks/{name}, without the API token. The body is
// read whole (up to Options.MaxHookBodyBytes) and its signature checked
// before anything is stored.
func (a *api) deliver(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.o.MaxHookBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			err = &requestError{status: http.StatusRequestEntityTooLarge, code: CodeTooLarge,
				msg: fmt.Sprintf("hook delivery body is larger than the limit of %d bytes (server.Options.MaxHookBodyBytes; --max-hook-body-bytes)", mbe.Limit)}
		}
		a.fail(w, r, err)
		return
	}
	c := a.c(r)
	if ns := r.PathValue("ns"); ns != "" { // the namespace in the path: senders set no headers
		if c, err = a.view(r, ns); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	d := host.Delivery{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header, Body: body}
	run, created, err := c.Deliver(r.Context(), r.PathValue("name"), d)
	switch {
	case errors.Is(err, host.ErrSignature), errors.Is(err, host.ErrStale), errors.Is(err, host.ErrReplay):
		refuse(w, http.StatusUnauthorized, CodeUnauthorized, err.Error())
		return
	case errors.Is(err, host.ErrIdempotencyKey):
		writeError(w, http.StatusConflict, CodeConflict, err.Error())
		return
	case errors.Is(err, host.ErrHookSecret):
		a.log.Error("skein api: hook delivery refused: its secret is not available", "hook", r.PathValue("name"), "err", err)
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, err.Error())
		return
	case err != nil:
		a.failNamed(w, r, "hook", err)
		return
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	writeJSON(w, status, runJSON(run))
}
