package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Batches (docs/api.md, "Batches"): an action applied to every run a
// filter selects, as a durable job.

func (a *api) routeBatches(mux *http.ServeMux) {
	a.handle(mux, "POST /v1/batches", apiRoute, a.startBatch)
	a.handle(mux, "GET /v1/batches", apiRoute, a.batches)
	a.handle(mux, "GET /v1/batches/{id}", apiRoute, a.batch)
	a.handle(mux, "POST /v1/batches/{id}/cancel", apiRoute, a.cancelBatch)
}

// failBatch answers err: a bad request (the filter, the action) is a
// 400 that says what rule it broke; an unknown batch a 404.
func (a *api) failBatch(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, host.ErrInvalid):
		err = badRequest("%v", err)
	case errors.Is(err, store.ErrAttrsUnsupported):
		err = badRequest("%v: the filter's attr. terms cannot be served by this server's store", err)
	case errors.Is(err, store.ErrNotFound) && r.PathValue("id") != "":
		err = notFound("no batch %q", r.PathValue("id"))
	}
	a.fail(w, r, err)
}

// startBatch: POST /v1/batches. A dry run answers the runs it would act
// on (200); a batch answers its job (202: a worker drives it).
func (a *api) startBatch(w http.ResponseWriter, r *http.Request) {
	var req client.BatchRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.DryRun {
		if !host.IsBatchAction(req.Action) {
			a.failBatch(w, r, badRequest("batch action %q: want one of the actions (docs/operations.md, \"Bulk actions\")", req.Action))
			return
		}
		rs, more, err := a.c(r).DryRunBatch(r.Context(), req.Where, req.Limit)
		if err != nil {
			a.failBatch(w, r, err)
			return
		}
		d := client.DryRun{DryRun: true, Runs: make([]client.Run, 0, len(rs)), More: more, Action: req.Action}
		for _, run := range rs {
			d.Runs = append(d.Runs, runJSON(run))
		}
		writeJSON(w, http.StatusOK, d)
		return
	}
	j, err := a.c(r).StartBatch(r.Context(), host.BatchOptions{Where: req.Where, Action: req.Action, Args: req.Args, Rate: req.Rate})
	if err != nil {
		a.failBatch(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, batchJSON(j))
}

// batches: GET /v1/batches?limit=N, newest first.
func (a *api) batches(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			a.fail(w, r, badRequest("limit %q: want a number from 1 to 1000", s))
			return
		}
		limit = n
	}
	js, err := a.c(r).Batches(r.Context(), limit)
	if err != nil {
		a.failBatch(w, r, err)
		return
	}
	l := client.BatchList{Batches: make([]client.Batch, 0, len(js))}
	for _, j := range js {
		l.Batches = append(l.Batches, batchJSON(j))
	}
	writeJSON(w, http.StatusOK, l)
}

// batch: GET /v1/batches/{id}.
func (a *api) batch(w http.ResponseWriter, r *http.Request) {
	j, err := a.c(r).Batch(r.Context(), r.PathValue("id"))
	if err != nil {
		a.failBatch(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, batchJSON(j))
}

// cancelBatch: POST /v1/batches/{id}/cancel with an optional
// {"reason": "..."}.
func (a *api) cancelBatch(w http.ResponseWriter, r *http.Request) {
	var req CancelRequest
	if err := a.decode(w, r, &req, true); err != nil {
		a.fail(w, r, err)
		return
	}
	j, err := a.c(r).CancelBatch(r.Context(), r.PathValue("id"), req.Reason)
	if err != nil {
		a.failBatch(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, batchJSON(j))
}

// batchJSON is a job as the API shows it.
func batchJSON(j store.BatchJob) client.Batch {
	b := client.Batch{ID: j.ID, Where: j.Where, Filter: j.Filter, Action: j.Action, Args: j.Args, Rate: j.Rate,
		Status: string(j.Status), Cancel: j.Cancel, Selected: j.Selected, Done: j.Done, Failed: j.Failed,
		Cursor: j.Cursor, Before: nsTime(j.Before), CreatedAt: j.CreatedAt.UTC(),
		StartedAt: unixTimeOf(j.StartedAt), ActedAt: unixTimeOf(j.ActedAt), EndedAt: unixTimeOf(j.EndedAt), Worker: j.LeaseOwner}
	for _, e := range j.Errors {
		b.Errors = append(b.Errors, client.BatchError{Run: e.RunID, Error: e.Error})
	}
	return b
}
