package server

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// runs: GET /v1/runs?where=&status=&workflow=&module=&created_from=&created_before=&sort=&limit=&cursor=.
func (a *api) runs(w http.ResponseWriter, r *http.Request) {
	f, err := a.runFilter(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	rs, err := a.c(r).Runs(r.Context(), f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	l := RunList{Runs: make([]Run, 0, len(rs))}
	for _, run := range rs {
		l.Runs = append(l.Runs, runJSON(run))
	}
	if err := a.withAttrs(r, l.Runs); err != nil {
		a.fail(w, r, err)
		return
	}
	if len(rs) == f.Limit {
		last := rs[len(rs)-1]
		l.NextCursor = last.ID
		if f.Order != store.OrderID {
			l.NextCursor = strconv.FormatInt(store.RunSortKey(last, f.Order, f.Desc), 10) + ":" + last.ID
		}
	}
	writeJSON(w, http.StatusOK, l)
}

// runFilter reads the query of GET /v1/runs; a bad parameter is a 400
// that names it.
func (a *api) runFilter(r *http.Request) (store.RunFilter, error) {
	q := r.URL.Query()
	f, err := a.whereParam(r, q)
	if err != nil {
		return f, err
	}
	f.Status, f.Limit = store.RunStatus(q.Get("status")), 100
	if w := q.Get("workflow"); w != "" {
		f.Workflow = w
	}
	if f.Status != "" && !slices.Contains(store.RunStatuses, f.Status) {
		return f, badRequest("status %q: want one of %s", f.Status, joinStatuses())
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return f, badRequest("limit %q: want a number from 1 to 1000", s)
		}
		f.Limit = n
	}
	if err := a.moduleFilter(r, q, &f); err != nil {
		return f, err
	}
	if err := a.attrFilter(r, q, &f); err != nil {
		return f, err
	}
	var err2 error
	if f.CreatedFrom, err2 = timeParamOr(q, "created_from", f.CreatedFrom); err2 != nil {
		return f, err2
	}
	if f.CreatedTo, err2 = timeParamOr(q, "created_before", f.CreatedTo); err2 != nil {
		return f, err2
	}
	sort := q.Get("sort")
	name, desc := strings.CutPrefix(sort, "-")
	f.Desc = desc
	if f.Order = store.RunOrder(name); name == "id" {
		f.Order = store.OrderID
	} else if sort != "" && (name == "" || !slices.Contains(store.RunOrders, f.Order)) {
		return f, badRequest("sort %q: want id, created, ended, duration or status, with a leading - for descending order", sort)
	}
	return f, cursorParam(q.Get("cursor"), sort, &f)
}

// moduleFilter sets f.Module from the module parameter: a module's name
// (the module it names now) or hash.
func (a *api) moduleFilter(r *http.Request, q url.Values, f *store.RunFilter) error {
	ref := q.Get("module")
	if ref == "" {
		return nil
	}
	m, err := a.c(r).Module(r.Context(), ref)
	switch {
	case err == nil:
		f.Module = m.Hash
	case !errors.Is(err, store.ErrNotFound):
		return err
	case host.IsModuleHash(ref):
		f.Module = ref // a hash no module has now: its runs may remain
	default:
		return badRequest("module %q: no module has this name or hash", ref)
	}
	return nil
}

// timeParam reads an RFC 3339 time parameter as unix ns (0 when absent).
func timeParam(q url.Values, name string) (int64, error) {
	s := q.Get(name)
	if s == "" {
		return 0, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.UnixNano() <= 0 {
		return 0, badRequest("%s %q: want an RFC 3339 time after 1970, e.g. 2026-12-01T09:00:00Z", name, s)
	}
	return t.UnixNano(), nil
}

// cursorParam reads the cursor: a run id under the order by id, else the
// sort key and the id of the page's last run, "KEY:ID", as next_cursor
// gives it.
func cursorParam(s, sort string, f *store.RunFilter) error {
	if s == "" || f.Order == store.OrderID {
		f.After = s
		return nil
	}
	k, id, ok := strings.Cut(s, ":")
	key, err := strconv.ParseInt(k, 10, 64)
	if !ok || err != nil || id == "" {
		return badRequest("cursor %q: not a cursor of sort=%s (pass the next_cursor of the previous page with the same sort)", s, sort)
	}
	f.After, f.AfterKey = id, key
	return nil
}
