package server

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// whereParam reads the where parameter of GET /v1/runs: a filter of the
// language (internal/runfilter), with its module resolved. The other
// parameters add to it; one that sets a field the filter sets too is a
// 400 naming both, so that neither silently wins.
func (a *api) whereParam(r *http.Request, q url.Values) (store.RunFilter, error) {
	where := q.Get("where")
	if where == "" {
		return store.RunFilter{}, nil
	}
	f, err := a.c(r).ParseFilter(r.Context(), where, time.Now())
	if errors.Is(err, host.ErrInvalid) {
		return f, badRequest("where: %v", err)
	}
	if err != nil {
		return f, err
	}
	for _, c := range []struct {
		param string
		set   bool
	}{{"workflow", f.Workflow != ""}, {"module", f.Module != ""},
		{"created_from", f.CreatedFrom != 0}, {"created_before", f.CreatedTo != 0}} {
		if c.set && q.Get(c.param) != "" {
			return f, badRequest("where and %s both bound the same field: give it once", c.param)
		}
	}
	return f, nil
}

// timeParamOr is timeParam, or def when the parameter is absent.
func timeParamOr(q url.Values, name string, def int64) (int64, error) {
	if q.Get(name) == "" {
		return def, nil
	}
	return timeParam(q, name)
}
