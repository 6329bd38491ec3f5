package server

import (
	"errors"
	"net/http"

	"github.com/skeinrun/skein/host"
)

// reset: POST /v1/runs/{id}/reset with {"to": KEY, "module", "input",
// "id"}; answers 201 with the new run.
func (a *api) reset(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req ResetRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.To == "" {
		a.fail(w, r, badRequest(`give "to": the key of the op to reset the run to`))
		return
	}
	run, err := a.c(r).Reset(r.Context(), host.ResetOptions{RunID: id, ToKey: req.To, Module: req.Module, Input: req.Input, NewID: req.ID})
	if err != nil {
		if _, e := a.c(r).Run(r.Context(), id); errors.Is(e, host.ErrNotFound) {
			err = noRun(id)
		}
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, runJSON(run))
}
