package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/store"
)

// Search attributes: the declarations (/v1/attributes), a run's values
// in its document, and the attr.NAME=VALUE conditions of GET /v1/runs.

// routeAttrs registers the endpoints of this file.
func (a *api) routeAttrs(mux *http.ServeMux) {
	a.handle(mux, "POST /v1/attributes", apiRoute, a.createAttr)
	a.handle(mux, "GET /v1/attributes", apiRoute, a.attrs)
	a.handle(mux, "DELETE /v1/attributes/{name}", apiRoute, a.deleteAttr)
}

func attrJSON(d store.AttrDecl) client.Attribute {
	return client.Attribute{Name: d.Name, Type: string(d.Type), CreatedAt: d.CreatedAt.UTC()}
}

func (a *api) createAttr(w http.ResponseWriter, r *http.Request) {
	var req client.AttributeRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	d, err := a.c(r).CreateAttribute(r.Context(), req.Name, store.AttrType(req.Type))
	if err != nil {
		a.failNamed(w, r, "search attribute", err)
		return
	}
	writeJSON(w, http.StatusCreated, attrJSON(d))
}

func (a *api) attrs(w http.ResponseWriter, r *http.Request) {
	ds, err := a.c(r).Attributes(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	l := client.AttributeList{Attributes: make([]client.Attribute, 0, len(ds))}
	for _, d := range ds {
		l.Attributes = append(l.Attributes, attrJSON(d))
	}
	writeJSON(w, http.StatusOK, l)
}

func (a *api) deleteAttr(w http.ResponseWriter, r *http.Request) {
	if err := a.c(r).DeleteAttribute(r.Context(), r.PathValue("name")); err != nil {
		a.failNamed(w, r, "search attribute", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// attrFilter sets f.Attrs from the query's attr.NAME=VALUE parameters:
// the runs whose attribute NAME equals VALUE, read as the declared type.
func (a *api) attrFilter(r *http.Request, q url.Values, f *store.RunFilter) error {
	var decls []store.AttrDecl
	for key, vs := range q {
		name, ok := strings.CutPrefix(key, "attr.")
		if !ok {
			continue
		}
		if decls == nil {
			var err error
			if decls, err = a.c(r).Attributes(r.Context()); err != nil {
				return err
			}
		}
		t, err := declType(decls, name)
		if err != nil {
			return badRequest("%s: %v", key, err)
		}
		for _, s := range vs {
			v, err := store.ParseAttrValue(t, s)
			if err != nil {
				return badRequest("%s: the attribute is a %s: %v", key, t, err)
			}
			f.Attrs = append(f.Attrs, store.AttrCond{Name: name, Op: store.AttrEq, Value: v})
		}
	}
	return nil
}

// declType is the declared type of the attribute name.
func declType(decls []store.AttrDecl, name string) (store.AttrType, error) {
	for _, d := range decls {
		if d.Name == name {
			return d.Type, nil
		}
	}
	return "", fmt.Errorf("attribute %q is not declared (GET /v1/attributes)", name)
}

// withAttrs adds their search attributes to the documents of runs.
func (a *api) withAttrs(r *http.Request, runs []Run) error {
	ids := make([]string, len(runs))
	for i := range runs {
		ids[i] = runs[i].ID
	}
	m, err := a.c(r).RunAttributes(r.Context(), ids...)
	if err != nil {
		return err
	}
	for i := range runs {
		if vs := m[runs[i].ID]; len(vs) > 0 {
			runs[i].Attributes = attrsJSON(vs)
		}
	}
	return nil
}

// attrsJSON is values as a run's document shows them
// (store.AttrsJSONValue).
func attrsJSON(vs map[string]any) map[string]any {
	out := make(map[string]any, len(vs))
	for k, v := range vs {
		out[k] = store.AttrsJSONValue(v)
	}
	return out
}
