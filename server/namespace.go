package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Every request acts in one namespace (docs/tenants.md): the handlers
// call the host's view of it (host.Host.In), so that what one
// namespace's request names or lists is only that namespace's.

// NamespaceHeader names the namespace a request acts in; without it, a
// request acts in store.DefaultNamespace.
const NamespaceHeader = "X-Skein-Namespace"

// viewKey keys the request's namespace view in its context.
type viewKey struct{}

// scoped puts the view of the request's namespace in its context before
// next serves it. A namespace name that breaks the rule is a 400, one
// that names no namespace (skein namespace create) a 404.
func (a *api) scoped(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := a.view(r, a.ns(r))
		if err != nil {
			a.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewKey{}, v)))
	})
}

// view returns the host's view of namespace ns, which must exist.
func (a *api) view(r *http.Request, ns string) (host.Client, error) {
	v, err := a.h.In(ns)
	if err != nil {
		return nil, badRequest("namespace: %v", err)
	}
	if ns == store.DefaultNamespace {
		return v, nil // it always exists
	}
	if _, err := a.h.Namespace(r.Context(), ns); errors.Is(err, store.ErrNotFound) {
		return nil, notFound("no namespace %q (skein namespace create %s)", ns, ns)
	} else if err != nil {
		return nil, err
	}
	return v, nil
}

// ns returns the name of r's namespace.
func (a *api) ns(r *http.Request) string {
	if ns := r.Header.Get(NamespaceHeader); ns != "" {
		return ns
	}
	return store.DefaultNamespace
}

// c returns the host's view of r's namespace.
func (a *api) c(r *http.Request) host.Client {
	if v, ok := r.Context().Value(viewKey{}).(host.Client); ok {
		return v
	}
	v, err := a.h.In(store.DefaultNamespace)
	if err != nil { // the default namespace's name keeps the rule
		panic(err)
	}
	return v
}
