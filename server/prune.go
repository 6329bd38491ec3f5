package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Retention (docs/api.md, `POST /v1/runs/prune` and `DELETE /v1/runs/{id}`; docs/operations.md, "Retention").

type (
	// PruneRequest is client.PruneRequest: the body of POST /v1/runs/prune.
	PruneRequest = client.PruneRequest
	// PruneResult is client.PruneResult: its answer.
	PruneResult = client.PruneResult
)

// routePrune adds the routes of retention.
func (a *api) routePrune(mux *http.ServeMux) {
	a.handle(mux, "POST /v1/runs/prune", apiRoute, a.prune)
	a.handle(mux, "DELETE /v1/runs/{id}", apiRoute, a.deleteRun)
}

// prune: POST /v1/runs/prune with {"before": TIME} or {"older_than":
// "30d"}, and "dry_run".
func (a *api) prune(w http.ResponseWriter, r *http.Request) {
	var req PruneRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	var before time.Time
	switch {
	case (req.Before == nil) == (req.OlderThan == ""):
		a.fail(w, r, badRequest(`give the horizon as "before" (a time) or "older_than" (an age such as "30d" or "720h"), one of them`))
		return
	case req.Before != nil:
		before = *req.Before
	default:
		age, err := host.ParseAge(req.OlderThan)
		if err != nil {
			a.fail(w, r, badRequest("older_than: %v", err))
			return
		}
		before = time.Now().Add(-age)
	}
	rep, err := a.c(r).Prune(r.Context(), before, req.DryRun)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, PruneResult{Before: rep.Before.UTC(), DryRun: rep.DryRun, Runs: rep.Runs,
		Batches: rep.Batches, IDs: append([]string{}, rep.IDs...)})
}

// deleteRun: DELETE /v1/runs/{id}.
func (a *api) deleteRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := a.c(r).DeleteRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		err = noRun(id)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
