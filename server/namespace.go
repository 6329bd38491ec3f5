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

// viewKey keys the request's scope in its context.
type viewKey struct{}

// scope is the namespace a request acts in, and the host's view of it.
type scope struct {
	ns string
	v  host.Client
}

// nsOf returns the name of the namespace r acts in.
func (a *api) nsOf(r *http.Request) string {
	if s, ok := r.Context().Value(viewKey{}).(scope); ok {
		return s.ns
	}
	return store.DefaultNamespace
}

// scoped puts the view of the request's namespace in its context before
// next serves it. A namespace name that breaks the rule is a 400, one
// that names no namespace (skein namespace create) a 404.
func (a *api) scoped(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, err := a.ns(r)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		v, err := a.view(r, ns)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewKey{}, scope{ns, v})))
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

// ns returns the name of r's namespace: its principal's
// (Principal.NamespaceFor); a public route's (a webhook delivery, which
// has none) is the one its X-Skein-Namespace header names, or default.
func (a *api) ns(r *http.Request) (string, error) {
	if p := principalOf(r); p.Role != "" {
		return p.NamespaceFor(r)
	}
	if ns := r.Header.Get(NamespaceHeader); ns != "" {
		return ns, nil
	}
	return store.DefaultNamespace, nil
}

// c returns the host's view of r's namespace; a request that did not
// pass scoped (a handler called directly) acts in the default one.
func (a *api) c(r *http.Request) host.Client {
	if s, ok := r.Context().Value(viewKey{}).(scope); ok {
		return s.v
	}
	return a.def
}
