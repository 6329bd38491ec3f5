package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Holding runs: pause, unpause, and resume on a module (host/pause.go).

// pauseBy is who the API names as having paused a run: the caller. The
// server has one token and no names for its holders yet, so it is "api".
const pauseBy = "api"

func (a *api) routePause(mux *http.ServeMux) {
	a.handle(mux, "POST /v1/runs/{id}/pause", apiRoute, a.pause)
	a.handle(mux, "POST /v1/runs/{id}/unpause", apiRoute, a.unpause)
	a.handle(mux, "POST /v1/runs/{id}/resume", apiRoute, a.resume)
}

// pause: POST /v1/runs/{id}/pause with an optional {"reason": "..."}.
func (a *api) pause(w http.ResponseWriter, r *http.Request) {
	var req PauseRequest
	if err := a.decode(w, r, &req, true); err != nil {
		a.fail(w, r, err)
		return
	}
	if _, ok := a.pathRun(w, r); !ok {
		return
	}
	run, err := a.c(r).Pause(r.Context(), r.PathValue("id"), pauseBy, req.Reason)
	a.answerHold(w, r, run, err, "paused")
}

// unpause: POST /v1/runs/{id}/unpause.
func (a *api) unpause(w http.ResponseWriter, r *http.Request) {
	if err := a.decode(w, r, &struct{}{}, true); err != nil {
		a.fail(w, r, err)
		return
	}
	if _, ok := a.pathRun(w, r); !ok {
		return
	}
	run, err := a.c(r).Unpause(r.Context(), r.PathValue("id"))
	a.answerHold(w, r, run, err, "unpaused")
}

// resume: POST /v1/runs/{id}/resume with {"module": "NAME|HASH"}
// (optional: the run's own module).
func (a *api) resume(w http.ResponseWriter, r *http.Request) {
	var req ResumeRequest
	if err := a.decode(w, r, &req, true); err != nil {
		a.fail(w, r, err)
		return
	}
	if _, ok := a.pathRun(w, r); !ok {
		return
	}
	id := r.PathValue("id")
	run, err := a.c(r).ResumeOn(r.Context(), id, req.Module)
	if errors.Is(err, store.ErrNotFound) { // the run exists: the module does not
		err = notFound("no module %q", req.Module)
	}
	a.answerHold(w, r, run, err, "resumed")
}

// answerHold answers a pause, unpause or resume of a run: the run as
// stored, or the error (409 for a run that has ended, 400 for a module
// without the run's workflow).
func (a *api) answerHold(w http.ResponseWriter, r *http.Request, run store.Run, err error, what string) {
	id := r.PathValue("id")
	switch {
	case errors.Is(err, host.ErrTerminal):
		if run.Status == "" {
			run, _ = a.c(r).Run(r.Context(), id)
		}
		err = &requestError{status: http.StatusConflict, code: CodeConflict, msg: fmt.Sprintf("run %q has ended (%s); it cannot be %s", id, run.Status, what)}
	case errors.Is(err, host.ErrInvalid):
		err = badRequest("%s", strings.TrimPrefix(err.Error(), "resume "+id+": "))
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, runJSON(run))
}
