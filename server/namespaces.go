package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Namespace records (docs/api.md, "Namespaces"): /v1/namespaces.

// The documents of namespaces (defined in package client).
type (
	// NamespaceRequest is client.NamespaceRequest: the body of POST /v1/namespaces.
	NamespaceRequest = client.NamespaceRequest
	// NamespaceUpdate is client.NamespaceUpdate: the body of PATCH /v1/namespaces/{name}.
	NamespaceUpdate = client.NamespaceUpdate
	// Namespace is client.Namespace: a namespace as the API shows it.
	Namespace = client.Namespace
	// NamespaceList is client.NamespaceList: GET /v1/namespaces.
	NamespaceList = client.NamespaceList
)

// The words of a retention that are not durations.
const (
	retentionDefault = "default" // store.RetentionDefault
	retentionForever = "forever" // 0: ended runs are kept
)

// routeNamespaces registers the endpoints of this file.
func (a *api) routeNamespaces(mux *http.ServeMux) {
	a.handle(mux, "POST /v1/namespaces", apiRoute, a.createNamespace)
	a.handle(mux, "GET /v1/namespaces", apiRoute, a.namespaces)
	a.handle(mux, "GET /v1/namespaces/{name}", apiRoute, a.namespace)
	a.handle(mux, "PATCH /v1/namespaces/{name}", apiRoute, a.updateNamespace)
	a.handle(mux, "DELETE /v1/namespaces/{name}", apiRoute, a.deleteNamespace)
}

func namespaceJSON(n store.Namespace) Namespace {
	return Namespace{Name: n.Name, Description: n.Description, Retention: retentionText(n.Retention), Weight: n.Weight,
		CreatedAt: n.CreatedAt.UTC(), UpdatedAt: n.UpdatedAt.UTC()}
}

// retentionText is a retention as the API shows it.
func retentionText(d time.Duration) string {
	switch {
	case d == store.RetentionDefault:
		return retentionDefault
	case d == 0:
		return retentionForever
	}
	return d.String()
}

// parseRetention reads a request's retention: "default", "forever" (or
// "0") or a positive duration.
func parseRetention(s string) (time.Duration, error) {
	switch s {
	case retentionDefault:
		return store.RetentionDefault, nil
	case retentionForever, "0":
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, badRequest(`"retention" %q is not %q (the server's), %q (keep ended runs) or a positive duration such as "720h"`,
			s, retentionDefault, retentionForever)
	}
	return d, nil
}

// namespaceOptions are the host's options of a request's fields.
func namespaceOptions(description, retention *string, weight *int) (host.NamespaceOptions, error) {
	o := host.NamespaceOptions{Description: description, Weight: weight}
	if retention != nil {
		d, err := parseRetention(*retention)
		if err != nil {
			return o, err
		}
		o.Retention = &d
	}
	return o, nil
}

// failNamespace answers err: a bad field 400, an unknown namespace 404, a
// taken name, a namespace in use and namespace default 409.
func (a *api) failNamespace(w http.ResponseWriter, r *http.Request, err error) {
	var inUse *store.NamespaceInUseError
	switch {
	case errors.Is(err, host.ErrInvalid):
		err = badRequest("%v", err)
	case errors.As(err, &inUse):
		err = &requestError{status: http.StatusConflict, code: CodeConflict, msg: inUse.Error()}
	case errors.Is(err, store.ErrDefaultNamespace):
		err = &requestError{status: http.StatusConflict, code: CodeConflict, msg: store.ErrDefaultNamespace.Error()}
	case errors.Is(err, store.ErrNotFound) && r.PathValue("name") != "":
		err = notFound("no namespace %q (GET /v1/namespaces lists them)", r.PathValue("name"))
	case errors.Is(err, store.ErrConflict):
		err = &requestError{status: http.StatusConflict, code: CodeConflict, msg: fmt.Sprintf("a namespace of that name exists: %v", err)}
	}
	a.fail(w, r, err)
}

func (a *api) createNamespace(w http.ResponseWriter, r *http.Request) {
	var req NamespaceRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	var retention *string
	if req.Retention != "" {
		retention = &req.Retention
	}
	o, err := namespaceOptions(&req.Description, retention, req.Weight)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	n, err := a.h.CreateNamespace(r.Context(), req.Name, o)
	if err != nil {
		a.failNamespace(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, namespaceJSON(n))
}

func (a *api) namespaces(w http.ResponseWriter, r *http.Request) {
	ns, err := a.records(r).Namespaces(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	l := NamespaceList{Namespaces: make([]Namespace, 0, len(ns))}
	for _, n := range ns {
		l.Namespaces = append(l.Namespaces, namespaceJSON(n))
	}
	writeJSON(w, http.StatusOK, l)
}

func (a *api) namespace(w http.ResponseWriter, r *http.Request) {
	n, err := a.records(r).Namespace(r.Context(), r.PathValue("name"))
	if err != nil {
		a.failNamespace(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, namespaceJSON(n))
}

func (a *api) updateNamespace(w http.ResponseWriter, r *http.Request) {
	var req NamespaceUpdate
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	o, err := namespaceOptions(req.Description, req.Retention, req.Weight)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	n, err := a.h.UpdateNamespace(r.Context(), r.PathValue("name"), o)
	if err != nil {
		a.failNamespace(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, namespaceJSON(n))
}

func (a *api) deleteNamespace(w http.ResponseWriter, r *http.Request) {
	if err := a.h.DeleteNamespace(r.Context(), r.PathValue("name")); err != nil {
		a.failNamespace(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// records is what reads namespace records for r: the host for a root
// principal, which sees every namespace; the request's view for any
// other, which sees its own only.
func (a *api) records(r *http.Request) host.Client {
	if principalOf(r).Role == RoleRoot {
		return a.h
	}
	return a.c(r)
}
